/**
 * The HTTP/1.1 framing the port relay (ports-relay.ts) reads and writes on a tunnel stream: a response head, and the
 * body's end by its framing (RFC 9112 §6.3): none (HEAD, 1xx, 204, 304), a Content-Length, chunked, or the stream's
 * end. Pure functions over bytes; the relay keeps the bytes moving.
 */

/** The most bytes a response head may take (Node's own limit for a request head is 16 KiB; apps' cookies run long). */
export const MAX_RESPONSE_HEAD = 64 * 1024;

export class FramingError extends Error {}

export interface ResponseHead {
  status: number;
  statusText: string;
  /** Names and values in order, as Node's `rawHeaders`. */
  rawHeaders: string[];
  /** HTTP/1.0, or `Connection: close`: the stream is not used again after this response. */
  closes: boolean;
  /** `Transfer-Encoding` with chunked last. */
  chunked: boolean;
  /** The `Content-Length`, or null. */
  length: number | null;
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const STATUS_LINE = /^HTTP\/1\.([01]) (\d{3})(?: (.*))?$/;

/**
 * The head at the start of `buf` and where the body starts, or null while `buf` does not yet hold a whole head.
 * Throws a FramingError for a head that is not HTTP/1.x, too long, or has conflicting lengths.
 */
export function parseResponseHead(buf: Buffer): { head: ResponseHead; bodyStart: number } | null {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) {
    if (buf.length > MAX_RESPONSE_HEAD) throw new FramingError(`the reply's head is longer than ${MAX_RESPONSE_HEAD} bytes`);
    return null;
  }
  if (end > MAX_RESPONSE_HEAD) throw new FramingError(`the reply's head is longer than ${MAX_RESPONSE_HEAD} bytes`);
  const lines = buf.toString('latin1', 0, end).split('\r\n');
  const m = STATUS_LINE.exec(lines[0]);
  if (!m) throw new FramingError(`the app did not answer in HTTP/1.x (${JSON.stringify(lines[0].slice(0, 60))})`);
  const rawHeaders: string[] = [];
  const lengths = new Set<string>();
  let connection = '';
  let transferEncoding = '';
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    const name = colon > 0 ? line.slice(0, colon) : '';
    // A folded line (obs-fold) or a name that is not a token: refused, as Node's own parser refuses them.
    if (!TOKEN.test(name)) throw new FramingError(`the reply has a malformed header line (${JSON.stringify(line.slice(0, 60))})`);
    const value = line.slice(colon + 1).trim();
    const lower = name.toLowerCase();
    if (lower === 'content-length') for (const v of value.split(',')) lengths.add(v.trim());
    else if (lower === 'connection') connection += `,${value.toLowerCase()}`;
    else if (lower === 'transfer-encoding') transferEncoding += `,${value.toLowerCase()}`;
    rawHeaders.push(name, value);
  }
  const codings = transferEncoding.split(',').map((s) => s.trim()).filter(Boolean);
  const chunked = codings.at(-1) === 'chunked';
  let length: number | null = null;
  if (!chunked && codings.length === 0 && lengths.size > 0) {
    const [only, ...rest] = [...lengths];
    if (rest.length > 0 || !/^\d{1,15}$/.test(only)) throw new FramingError('the reply has a Content-Length that is not one number');
    length = Number(only);
  }
  const closes = m[1] === '0' ? !/(^|,)\s*keep-alive\s*(,|$)/.test(connection) : /(^|,)\s*close\s*(,|$)/.test(connection);
  return { head: { status: Number(m[2]), statusText: m[3] ?? '', rawHeaders, closes, chunked, length }, bodyStart: end + 4 };
}

/** What one feed of body bytes gave: the payload to pass on, and once the body ended, the bytes after it. */
export interface BodyStep {
  data: Buffer[];
  done: boolean;
  /** Bytes after the body's end (a well-behaved app sends none before the next request). */
  rest: Buffer | null;
}

export interface BodyReader {
  feed(chunk: Buffer): BodyStep;
  /** The stream ended: whether that was the body's end (a body that runs to the close), else it was cut short. */
  endOfStream(): boolean;
}

/** How a response's body ends, given the request's method. */
export function bodyReader(method: string, head: ResponseHead): BodyReader {
  if (method === 'HEAD' || head.status === 204 || head.status === 304 || head.status < 200) return lengthReader(0);
  if (head.chunked) return chunkedReader();
  if (head.length !== null) return lengthReader(head.length);
  return { feed: (chunk) => ({ data: [chunk], done: false, rest: null }), endOfStream: () => true };
}

function lengthReader(total: number): BodyReader {
  let left = total;
  return {
    feed(chunk) {
      if (left === 0) return { data: [], done: true, rest: chunk.length ? chunk : null };
      if (chunk.length <= left) {
        left -= chunk.length;
        return { data: [chunk], done: left === 0, rest: null };
      }
      const data = chunk.subarray(0, left);
      left = 0;
      return { data: [data], done: true, rest: chunk.subarray(data.length) };
    },
    endOfStream: () => left === 0,
  };
}

/** Longest chunk-size line (with extensions) and trailer line taken. */
const MAX_CHUNK_LINE = 4096;

/** Chunked framing taken off: the chunks' data, to be framed again for the browser (Node's ServerResponse does). */
function chunkedReader(): BodyReader {
  type State = 'size' | 'data' | 'data-crlf' | 'trailer';
  let state: State = 'size';
  let line = '';
  let left = 0;
  let ended = false;
  return {
    feed(chunk) {
      const data: Buffer[] = [];
      let i = 0;
      while (i < chunk.length && !ended) {
        if (state === 'data') {
          const n = Math.min(left, chunk.length - i);
          data.push(chunk.subarray(i, i + n));
          i += n;
          left -= n;
          if (left === 0) state = 'data-crlf';
          continue;
        }
        const nl = chunk.indexOf(10, i);
        const upto = nl < 0 ? chunk.length : nl + 1;
        line += chunk.toString('latin1', i, upto);
        i = upto;
        if (line.length > MAX_CHUNK_LINE) throw new FramingError('the reply has a chunk line longer than 4 KiB');
        if (nl < 0) break;
        const text = line.replace(/\r?\n$/, '');
        line = '';
        if (state === 'size') {
          const size = /^([0-9A-Fa-f]{1,12})[ \t]*(;.*)?$/.exec(text);
          if (!size) throw new FramingError(`the reply has a malformed chunk size (${JSON.stringify(text.slice(0, 40))})`);
          left = parseInt(size[1], 16);
          state = left === 0 ? 'trailer' : 'data';
        } else if (state === 'data-crlf') {
          if (text !== '') throw new FramingError('the reply has a chunk longer than its size');
          state = 'size';
        } else if (text === '') {
          ended = true; // the empty line after the trailers (none, mostly)
        }
      }
      return { data, done: ended, rest: ended && i < chunk.length ? chunk.subarray(i) : null };
    },
    endOfStream: () => ended,
  };
}

/** A chunk of a request body in chunked framing (the browser's framing is gone once Node's server parsed it). */
export function chunkFrame(data: Buffer): Buffer[] {
  return [Buffer.from(`${data.length.toString(16)}\r\n`, 'latin1'), data, Buffer.from('\r\n', 'latin1')];
}
export const LAST_CHUNK = '0\r\n\r\n';
