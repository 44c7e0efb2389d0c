/**
 * The onstart script as the API takes it. The spec: "Maximum 4048 characters; longer scripts are sent gzip-compressed
 * then base64-encoded" (api-spec, Instance creation fields). The CLI encodes a longer script itself, as that rule
 * asks of the client, where it refused it before (issue 29 item 10); the server decodes it (`readOnstart`) and the
 * container gets the script as written. The real vastai client sends the text as it is.
 */
import { gzipSync } from 'node:zlib';
import { ONSTART_DECODED_MAX_BYTES, ONSTART_MAX_CHARS } from '../instances/instances-constants.js';
import { UsageError } from './context.js';

/** `script` unchanged up to the limit; longer, gzip-compressed then base64-encoded. Too long even for that: refused. */
export function encodeOnstart(script: string, option: string): string {
  if (script.length <= ONSTART_MAX_CHARS) return script;
  const bytes = Buffer.byteLength(script, 'utf8');
  if (bytes > ONSTART_DECODED_MAX_BYTES) {
    throw new UsageError(`${option}: the script is ${bytes} bytes; the server takes at most ${ONSTART_DECODED_MAX_BYTES}`);
  }
  return gzipSync(Buffer.from(script, 'utf8')).toString('base64');
}
