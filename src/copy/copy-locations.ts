/**
 * The two sides of a `vastai copy` as the client sends them (client-compat-more §c, "Copy between instances and the
 * local machine"; client-compat-connect "copy SRC DST"): each id is what `parse_vast_url` made of the text typed
 * before the first `:`. `7:/x` sends `"7"` (a string), `C.7:/x` sends `"C.7"`, a bare `7` sends the integer 7 (path
 * `/`), `local:/x` sends `"local"`, a bare path sends null; `V.12` is a volume and `s3.101`, `drive` … are cloud
 * connections. Pure: the service decides what each side may be.
 */
import { ApiError, badRequest } from '../platform/errors.js';

export type CopySide =
  | { kind: 'local' }
  | { kind: 'instance'; id: number }
  /** `V.12`: a volume, reached through a running instance that mounts it (copy-service.ts). */
  | { kind: 'volume'; id: number };

/** What an id names; throws ApiError for what this server cannot copy or cannot read. */
export function copySide(field: 'src_id' | 'dst_id', id: unknown): CopySide {
  if (id === undefined || id === null || id === '' || id === 'local') return { kind: 'local' };
  if (typeof id === 'number') {
    if (Number.isSafeInteger(id) && id > 0) return { kind: 'instance', id };
    throw badRequest(`body.${field} ${id} is not an instance id`);
  }
  if (typeof id !== 'string') throw badRequest(`body.${field} must be an instance id ("7" or "C.7"), "local" or null`);
  const m = /^(?:C\.)?([1-9][0-9]{0,14})$/.exec(id);
  if (m && Number.isSafeInteger(Number(m[1]))) return { kind: 'instance', id: Number(m[1]) };
  const v = /^V\.([1-9][0-9]{0,14})$/.exec(id);
  if (v && Number.isSafeInteger(Number(v[1]))) return { kind: 'volume', id: Number(v[1]) };
  if (/^[a-z][a-z0-9_-]{0,31}(?:\.[0-9]+)?$/i.test(id)) {
    throw new ApiError('service_unavailable', `body.${field} ${JSON.stringify(id)} is a cloud connection: cloud copy needs rclone and stored cloud credentials, which this server does not provide; run rclone inside the instance instead`);
  }
  throw badRequest(`body.${field} ${JSON.stringify(id.slice(0, 40))} is not an instance id ("7" or "C.7"), "local" or null`);
}

/**
 * A path inside an instance, as rsync's daemon reads it below the instance's module: no leading `/` (the module is
 * the container's root), a trailing `/` kept (rsync's "the directory's contents"). `/` or nothing: the root.
 * Control characters are refused: rsync's daemon protocol sends arguments as text lines.
 */
export function modulePath(field: 'src_path' | 'dst_path', path: string | null | undefined): string {
  const p = path ?? '/';
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(p)) throw badRequest(`body.${field} must not hold control characters`);
  return p.replace(/^\/+/, '');
}
