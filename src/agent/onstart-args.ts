/**
 * How an instance's onstart script reaches its container: as arguments of the entrypoint's shell, not inside the
 * shell's script. Linux refuses any single argument over MAX_ARG_STRLEN (128 KiB) with E2BIG, and the server accepts
 * a gzip+base64 onstart that decodes to up to 256 KiB (spec: "longer scripts are sent gzip-compressed then
 * base64-encoded"; `instances-request.ts` `readOnstart`): quoted into the script, such an onstart made a container
 * that could never start (issue 29 item 10). Passed in pieces, each well under the limit, the shell writes them back
 * together with `printf '%s' "$@"`, byte for byte, whatever quotes the script holds.
 */

/**
 * UTF-16 units per piece. A unit is at most 3 bytes of UTF-8 (a surrogate pair, two units, is 4), so a piece is at
 * most 96 KiB: under the kernel's 128 KiB per argument.
 */
export const ONSTART_PIECE_UNITS = 32 * 1024;

/** The onstart script in pieces for the shell's positional parameters; none when there is nothing to run. */
export function onstartArgs(onstart: string | null): string[] {
  if (onstart === null || onstart.trim() === '') return [];
  const pieces: string[] = [];
  for (let at = 0; at < onstart.length; ) {
    let end = Math.min(onstart.length, at + ONSTART_PIECE_UNITS);
    // Never between the two halves of a surrogate pair: each piece must be valid text on its own.
    const last = onstart.charCodeAt(end - 1);
    if (end < onstart.length && last >= 0xd800 && last <= 0xdbff) end--;
    pieces.push(onstart.slice(at, end));
    at = end;
  }
  return pieces;
}
