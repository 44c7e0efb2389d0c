/**
 * The `sftp` subsystem of the agent's own SSH server (OpenSSH 9's `scp` speaks SFTP too): ssh2 parses the protocol,
 * and every file operation runs inside the instance's container (container-files.ts says why that keeps renters'
 * symlinks away from the host's files). A file handle streams: reads come from one `cat`/`tail` process while the
 * client reads on in order (as OpenSSH's client does, many requests ahead), writes go into one `dd` process while the
 * offsets follow each other; a jump starts a new process at the new offset. Replies keep the order of the requests
 * of each handle.
 */
import { posix } from 'node:path';
import type { Readable } from 'node:stream';
import type { Attributes, FileEntry, SFTPWrapper } from 'ssh2';
import type { ExecProcess } from './container-access.js';
import { ContainerFiles, FileOpError, type FileAttrs } from './container-files.js';
import { ssh2 } from './ssh2-lib.js';

/** The most one READ answers (sftp-server's limit): larger asks get this much, which SFTP allows. */
const MAX_READ = 256 * 1024 - 1024;
/** Entries per READDIR answer, so one answer stays far below any client's packet limit. */
const NAMES_PER_READDIR = 100;
/** Stop reading a file's process while this much is read ahead and not yet asked for. */
const READ_AHEAD_BYTES = 4 * 1024 * 1024;

const S_IFMT = 0o170000;
const TYPE_CHARS: Record<number, string> = { 0o040000: 'd', 0o120000: 'l', 0o020000: 'c', 0o060000: 'b', 0o010000: 'p', 0o140000: 's' };
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** `ls -l`'s line for an entry, which OpenSSH's `ls -l` prints as it is. */
export function longName(name: string, a: FileAttrs): string {
  let perms = TYPE_CHARS[a.mode & S_IFMT] ?? '-';
  const bits = 'rwxrwxrwx';
  for (let i = 0; i < 9; i++) perms += a.mode & (1 << (8 - i)) ? bits[i] : '-';
  const d = new Date(a.mtime * 1000);
  const date = `${MONTHS[d.getUTCMonth()]} ${String(d.getUTCDate()).padStart(2, ' ')} ${String(d.getUTCHours()).padStart(2, '0')}:${String(d.getUTCMinutes()).padStart(2, '0')}`;
  return `${perms}    1 ${String(a.uid).padEnd(8)} ${String(a.gid).padEnd(8)} ${String(a.size).padStart(8)} ${date} ${name}`;
}

/** Reads a file's process as the client asks, in order. */
class FileReader {
  private chunks: Buffer[] = [];
  private buffered = 0;
  private ended = false;
  private waiting: (() => void) | null = null;
  private constructor(
    private readonly proc: ExecProcess,
    public pos: number,
  ) {
    const out: Readable = proc.stdout;
    out.on('data', (d: Buffer) => {
      this.chunks.push(d);
      this.buffered += d.length;
      if (this.buffered > READ_AHEAD_BYTES) out.pause();
      this.wake();
    });
    out.once('end', () => {
      this.ended = true;
      this.wake();
    });
    proc.stdin.end();
  }

  static async start(files: ContainerFiles, path: string, offset: number): Promise<FileReader> {
    return new FileReader(await files.reader(path, offset), offset);
  }

  private wake(): void {
    const w = this.waiting;
    this.waiting = null;
    w?.();
  }

  /** Up to `len` bytes at `pos`; null at the end of the file. */
  async read(len: number): Promise<Buffer | null> {
    while (this.buffered < len && !this.ended) await new Promise<void>((r) => (this.waiting = r));
    if (this.buffered === 0) {
      // The process ended: at the end of the file, or it failed (no such file, a directory).
      await ContainerFiles.finished(this.proc, 'read');
      return null;
    }
    // From the front chunks only: the read-ahead may hold megabytes, a read asks for tens of kilobytes.
    const parts: Buffer[] = [];
    let need = Math.min(len, this.buffered);
    while (need > 0) {
      const head = this.chunks[0];
      if (head.length <= need) {
        parts.push(head);
        this.chunks.shift();
        need -= head.length;
      } else {
        parts.push(head.subarray(0, need));
        this.chunks[0] = head.subarray(need);
        need = 0;
      }
    }
    const out = parts.length === 1 ? parts[0] : Buffer.concat(parts);
    this.buffered -= out.length;
    this.pos += out.length;
    if (this.buffered <= READ_AHEAD_BYTES) this.proc.stdout.resume();
    return out;
  }

  /** Stops the reader (a `cat` cut short would otherwise wait forever on a pipe no one reads). */
  close(): void {
    void this.proc.hangup().finally(() => this.proc.destroy());
  }
}

/** Writes into a file's process while the offsets follow each other. */
class FileWriter {
  private constructor(
    private readonly proc: ExecProcess,
    public pos: number,
  ) {
    proc.stdout.resume();
  }

  static async start(files: ContainerFiles, path: string, offset: number, append: boolean): Promise<FileWriter> {
    return new FileWriter(await files.writer(path, offset, append), offset);
  }

  async write(data: Buffer): Promise<void> {
    this.pos += data.length;
    if (!this.proc.stdin.write(data)) await new Promise<void>((r) => this.proc.stdin.once('drain', r));
  }

  async finish(): Promise<void> {
    this.proc.stdin.end();
    await ContainerFiles.finished(this.proc, 'write');
  }
}

interface FileHandle {
  kind: 'file';
  path: string;
  append: boolean;
  reader: FileReader | null;
  writer: FileWriter | null;
  /** Each handle's operations run one after another, in the order asked. */
  chain: Promise<void>;
}

interface DirHandle {
  kind: 'dir';
  path: string;
  /** Entries not yet sent (listed on the first READDIR). */
  left: FileEntry[] | null;
  chain: Promise<void>;
}

/** Serves one SFTP session of an instance's container. */
export function serveSftp(sftp: SFTPWrapper, files: ContainerFiles, onError: (err: Error) => void): void {
  const { STATUS_CODE, OPEN_MODE } = ssh2().utils.sftp;
  const handles = new Map<number, FileHandle | DirHandle>();
  let nextHandle = 1;
  let home: Promise<string> | null = null;
  const homeDir = () => (home ??= files.home().catch(() => '/'));

  const resolvePath = async (p: string) => posix.resolve(await homeDir(), p === '' ? '.' : p);

  const statusOf = (err: unknown): number => {
    if (!(err instanceof FileOpError)) return STATUS_CODE.FAILURE;
    if (err.code === 'no_such_file') return STATUS_CODE.NO_SUCH_FILE;
    if (err.code === 'permission_denied') return STATUS_CODE.PERMISSION_DENIED;
    return STATUS_CODE.FAILURE;
  };
  const fail = (reqId: number, err: unknown) => {
    if (!(err instanceof FileOpError)) onError(err as Error);
    sftp.status(reqId, statusOf(err), (err as Error).message);
  };

  /** Runs an operation that answers itself; a thrown error answers its status. */
  const op = (reqId: number, fn: () => Promise<void>) => {
    fn().catch((err) => fail(reqId, err));
  };
  const onHandle = (reqId: number, raw: Buffer, fn: (h: FileHandle | DirHandle) => Promise<void>) => {
    const h = raw.length === 4 ? handles.get(raw.readUInt32BE(0)) : undefined;
    if (!h) return sftp.status(reqId, STATUS_CODE.FAILURE, 'no such handle');
    h.chain = h.chain.then(() => fn(h).catch((err) => fail(reqId, err)));
  };
  const newHandle = (h: FileHandle | DirHandle): Buffer => {
    const id = nextHandle++;
    handles.set(id, h);
    const buf = Buffer.alloc(4);
    buf.writeUInt32BE(id, 0);
    return buf;
  };
  const attrsOut = (a: FileAttrs): Attributes => ({ mode: a.mode, uid: a.uid, gid: a.gid, size: a.size, atime: a.atime, mtime: a.mtime });
  const attrsIn = (a: Partial<Attributes> | undefined): Partial<FileAttrs> => {
    const out: Partial<FileAttrs> = {};
    if (!a) return out;
    if (typeof a.mode === 'number') out.mode = a.mode;
    if (typeof a.uid === 'number' && typeof a.gid === 'number') {
      out.uid = a.uid;
      out.gid = a.gid;
    }
    if (typeof a.size === 'number') out.size = a.size;
    if (typeof a.mtime === 'number') out.mtime = a.mtime;
    return out;
  };

  const finishWriter = async (h: FileHandle) => {
    const w = h.writer;
    h.writer = null;
    if (w) await w.finish();
  };

  sftp.on('OPEN', (reqId: number, filename: string, flags: number, attrs: Attributes) => op(reqId, async () => {
    const path = await resolvePath(filename);
    const write = (flags & OPEN_MODE.WRITE) !== 0;
    let f = write ? '' : 'r';
    if (flags & OPEN_MODE.CREAT) f += 'c';
    if (flags & OPEN_MODE.TRUNC) f += 't';
    if (flags & OPEN_MODE.EXCL) f += 'x';
    await files.open(path, f, typeof attrs?.mode === 'number' ? attrs.mode : null);
    const handle = newHandle({ kind: 'file', path, append: (flags & OPEN_MODE.APPEND) !== 0, reader: null, writer: null, chain: Promise.resolve() });
    sftp.handle(reqId, handle);
  }));

  sftp.on('READ', (reqId: number, raw: Buffer, offset: number, len: number) => onHandle(reqId, raw, async (h) => {
    if (h.kind !== 'file') return sftp.status(reqId, STATUS_CODE.FAILURE, 'a directory');
    await finishWriter(h);
    if (!h.reader || h.reader.pos !== offset) {
      h.reader?.close();
      h.reader = await FileReader.start(files, h.path, offset);
    }
    const data = await h.reader.read(Math.min(len, MAX_READ));
    if (data === null) {
      h.reader.close();
      h.reader = null;
      return sftp.status(reqId, STATUS_CODE.EOF);
    }
    sftp.data(reqId, data);
  }));

  sftp.on('WRITE', (reqId: number, raw: Buffer, offset: number, data: Buffer) => onHandle(reqId, raw, async (h) => {
    if (h.kind !== 'file') return sftp.status(reqId, STATUS_CODE.FAILURE, 'a directory');
    h.reader?.close();
    h.reader = null;
    if (!h.writer || (!h.append && h.writer.pos !== offset)) {
      await finishWriter(h);
      h.writer = await FileWriter.start(files, h.path, offset, h.append);
    }
    await h.writer.write(data);
    sftp.status(reqId, STATUS_CODE.OK);
  }));

  sftp.on('FSTAT', (reqId: number, raw: Buffer) => onHandle(reqId, raw, async (h) => {
    if (h.kind === 'file') await finishWriter(h);
    sftp.attrs(reqId, attrsOut(await files.stat(h.path, true)));
  }));

  sftp.on('FSETSTAT', (reqId: number, raw: Buffer, attrs: Attributes) => onHandle(reqId, raw, async (h) => {
    if (h.kind === 'file') await finishWriter(h);
    await files.setstat(h.path, attrsIn(attrs));
    sftp.status(reqId, STATUS_CODE.OK);
  }));

  sftp.on('CLOSE', (reqId: number, raw: Buffer) => onHandle(reqId, raw, async (h) => {
    handles.delete(raw.readUInt32BE(0));
    if (h.kind === 'file') {
      h.reader?.close();
      h.reader = null;
      await finishWriter(h);
    }
    sftp.status(reqId, STATUS_CODE.OK);
  }));

  sftp.on('OPENDIR', (reqId: number, p: string) => op(reqId, async () => {
    const path = await resolvePath(p);
    const a = await files.stat(path, true);
    if ((a.mode & S_IFMT) !== 0o040000) throw new FileOpError('failure', `${path}: not a directory`);
    sftp.handle(reqId, newHandle({ kind: 'dir', path, left: null, chain: Promise.resolve() }));
  }));

  sftp.on('READDIR', (reqId: number, raw: Buffer) => onHandle(reqId, raw, async (h) => {
    if (h.kind !== 'dir') return sftp.status(reqId, STATUS_CODE.FAILURE, 'not a directory');
    h.left ??= (await files.readdir(h.path)).map((e) => ({ filename: e.name, longname: longName(e.name, e.attrs), attrs: attrsOut(e.attrs) }));
    if (h.left.length === 0) return sftp.status(reqId, STATUS_CODE.EOF);
    sftp.name(reqId, h.left.splice(0, NAMES_PER_READDIR));
  }));

  sftp.on('STAT', (reqId: number, p: string) => op(reqId, async () => sftp.attrs(reqId, attrsOut(await files.stat(await resolvePath(p), true)))));
  sftp.on('LSTAT', (reqId: number, p: string) => op(reqId, async () => sftp.attrs(reqId, attrsOut(await files.stat(await resolvePath(p), false)))));
  sftp.on('SETSTAT', (reqId: number, p: string, attrs: Attributes) => op(reqId, async () => {
    await files.setstat(await resolvePath(p), attrsIn(attrs));
    sftp.status(reqId, STATUS_CODE.OK);
  }));
  sftp.on('REMOVE', (reqId: number, p: string) => op(reqId, async () => {
    await files.remove(await resolvePath(p));
    sftp.status(reqId, STATUS_CODE.OK);
  }));
  sftp.on('RMDIR', (reqId: number, p: string) => op(reqId, async () => {
    await files.rmdir(await resolvePath(p));
    sftp.status(reqId, STATUS_CODE.OK);
  }));
  sftp.on('MKDIR', (reqId: number, p: string, attrs: Attributes) => op(reqId, async () => {
    await files.mkdir(await resolvePath(p), typeof attrs?.mode === 'number' ? attrs.mode : null);
    sftp.status(reqId, STATUS_CODE.OK);
  }));
  sftp.on('RENAME', (reqId: number, from: string, to: string) => op(reqId, async () => {
    await files.rename(await resolvePath(from), await resolvePath(to));
    sftp.status(reqId, STATUS_CODE.OK);
  }));
  sftp.on('READLINK', (reqId: number, p: string) => op(reqId, async () => {
    const target = await files.readlink(await resolvePath(p));
    sftp.name(reqId, [{ filename: target, longname: target, attrs: {} as Attributes }]);
  }));
  sftp.on('SYMLINK', (reqId: number, targetPath: string, linkPath: string) => op(reqId, async () => {
    await files.symlink(targetPath, await resolvePath(linkPath));
    sftp.status(reqId, STATUS_CODE.OK);
  }));
  sftp.on('REALPATH', (reqId: number, p: string) => op(reqId, async () => {
    const path = await resolvePath(p);
    sftp.name(reqId, [{ filename: path, longname: path, attrs: {} as Attributes }]);
  }));
  sftp.on('EXTENDED', (reqId: number) => sftp.status(reqId, STATUS_CODE.OP_UNSUPPORTED));

  // The client is done (its EOF): the channel closes once what it asked for is answered, with exit status 0 as
  // sshd's sftp-server gives (OpenSSH's scp fails a copy whose ssh ended without one). ssh2's SFTP object has no
  // method for it; its channel's protocol does.
  sftp.once('end', () => {
    void Promise.all([...handles.values()].map((h) => h.chain)).then(() => {
      const raw = sftp as unknown as { _protocol?: { exitStatus(id: number, status: number): void }; outgoing?: { id: number; state: string } };
      if (raw._protocol && raw.outgoing?.state === 'open') raw._protocol.exitStatus(raw.outgoing.id, 0);
      sftp.end();
    });
  });

  sftp.once('close', () => {
    for (const h of handles.values()) {
      if (h.kind === 'file') {
        h.reader?.close();
        void h.writer?.finish().catch(() => undefined);
      }
    }
    handles.clear();
  });
}
