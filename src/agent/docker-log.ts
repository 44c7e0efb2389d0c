/**
 * Docker's log stream of a container without a TTY interleaves stdout and stderr in frames: an 8-byte header (stream
 * type, three zero bytes, the payload length as a big-endian uint32), then the payload. This undoes the framing, in
 * the order written. Input that is not framed (a TTY container) is returned as it is.
 */
const HEADER_BYTES = 8;
/** Stream types: 0 stdin, 1 stdout, 2 stderr. */
const MAX_STREAM_TYPE = 2;

export function demuxDockerLog(buf: Buffer): string {
  const parts: Buffer[] = [];
  let at = 0;
  while (at < buf.length) {
    if (buf.length - at < HEADER_BYTES || buf[at] > MAX_STREAM_TYPE || buf[at + 1] !== 0 || buf[at + 2] !== 0 || buf[at + 3] !== 0) {
      // Not a frame: raw output.
      if (at === 0) return buf.toString('utf8');
      parts.push(buf.subarray(at));
      break;
    }
    const size = buf.readUInt32BE(at + 4);
    parts.push(buf.subarray(at + HEADER_BYTES, Math.min(buf.length, at + HEADER_BYTES + size)));
    at += HEADER_BYTES + size;
  }
  return Buffer.concat(parts).toString('utf8');
}

/**
 * What a log request answers: the lines containing `filter` (all when null), then the last `tail` of them (all when
 * null), then at most `maxChars` from the end.
 */
export function selectLogLines(text: string, tail: number | null, filter: string | null, maxChars: number): string {
  let lines = text.split('\n');
  if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  if (filter !== null && filter !== '') lines = lines.filter((l) => l.includes(filter));
  if (tail !== null) lines = lines.slice(-tail);
  const out = lines.length ? `${lines.join('\n')}\n` : '';
  return out.length > maxChars ? out.slice(out.length - maxChars) : out;
}
