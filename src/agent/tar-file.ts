/**
 * A tar archive of one file (and its parent directories), for Docker's archive API (`PUT /containers/{id}/archive`):
 * how the agent puts a file into a container without running a program in it (the notice before a stop). Hand-made
 * ustar (POSIX.1-1988) headers: a few dozen lines instead of a dependency.
 */

const BLOCK = 512;

function header(name: string, size: number, type: '0' | '5', mode: number, mtime: number): Buffer {
  if (Buffer.byteLength(name) > 100) throw new Error(`tar: name too long: ${name}`);
  const h = Buffer.alloc(BLOCK);
  const put = (text: string, offset: number, len: number) => h.write(text, offset, len, 'utf8');
  const field = (n: number, offset: number, len: number) => put(n.toString(8).padStart(len - 1, '0') + '\0', offset, len);
  put(name, 0, 100);
  field(mode, 100, 8);
  field(0, 108, 8); // uid: root
  field(0, 116, 8); // gid: root
  field(size, 124, 12);
  field(Math.floor(mtime), 136, 12);
  put('        ', 148, 8); // the checksum counts its own field as spaces
  put(type, 156, 1);
  put('ustar\0', 257, 6);
  put('00', 263, 2);
  put('root', 265, 32);
  put('root', 297, 32);
  let sum = 0;
  for (const b of h) sum += b;
  put(sum.toString(8).padStart(6, '0') + '\0 ', 148, 8);
  return h;
}

/**
 * `path` (absolute, e.g. /run/gpuplane/stop) with `content`, mode 0644 (or `mode`: the emulator's stand-in nvidia-smi
 * is 0755), owned by root, readable by every user of the container; its parent directories (mode 0755) listed first.
 * To be extracted at `/`.
 */
export function tarOfFile(path: string, content: string | Buffer, mtime: number, mode = 0o644): Buffer {
  const parts = path.replace(/^\/+/, '').split('/').filter(Boolean);
  if (parts.length === 0 || parts.some((p) => p === '.' || p === '..')) throw new Error(`tar: bad path: ${path}`);
  const blocks: Buffer[] = [];
  // Only the directories below the first: an entry for /run itself would reset its mode in images that have it.
  for (let i = 2; i < parts.length; i++) blocks.push(header(parts.slice(0, i).join('/') + '/', 0, '5', 0o755, mtime));
  const body = typeof content === 'string' ? Buffer.from(content, 'utf8') : content;
  blocks.push(header(parts.join('/'), body.length, '0', mode, mtime));
  blocks.push(body, Buffer.alloc((BLOCK - (body.length % BLOCK)) % BLOCK));
  blocks.push(Buffer.alloc(BLOCK * 2)); // end of archive
  return Buffer.concat(blocks);
}
