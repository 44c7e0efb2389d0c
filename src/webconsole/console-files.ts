import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';
import { gzipSync } from 'node:zlib';

/**
 * Vite names every file it writes under `assets/` by a hash of its content, so a browser may keep them for a year
 * without asking again; a new build is new names. index.html (which names them) must be asked for every time.
 */
export const IMMUTABLE_CACHE = 'public, max-age=31536000, immutable';
export const REVALIDATE_CACHE = 'no-cache';
/** The folder of hashed files in a Vite build (its `build.assetsDir`). */
export const ASSETS_DIR = 'assets';

/**
 * The types of what a Vite build writes, each with its charset decided. Not a MIME package (or @fastify/static, which
 * brings one): the build writes these few kinds only, and anything else is served as bytes, never guessed at.
 */
const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2',
  '.map': 'application/json; charset=utf-8',
};
/** Text types worth compressing; images and fonts are compressed already. */
const COMPRESSIBLE = /^(text\/|application\/json|image\/svg)/;

export interface ConsoleFile {
  body: Buffer;
  /** The gzip of `body`, made on first use (start-up stays fast), or null when not worth it. */
  gzip(): Buffer | null;
  type: string;
  cacheControl: string;
}

/** Whether the folder holds a built console (its index.html): the server serves it at `/` then. */
export function consoleBuilt(dir: string | undefined): dir is string {
  return dir !== undefined && existsSync(join(dir, 'index.html'));
}

/**
 * The built console, read into memory once at start (a few hundred kilobytes): URL path (`/index.html`,
 * `/assets/index-3f2a.js`) → file. Undefined when the folder or its index.html is missing (not built).
 */
export function loadConsoleFiles(dir: string | undefined): Map<string, ConsoleFile> | undefined {
  if (!consoleBuilt(dir)) return undefined;
  const files = new Map<string, ConsoleFile>();
  const walk = (folder: string) => {
    for (const name of readdirSync(folder)) {
      const path = join(folder, name);
      if (statSync(path).isDirectory()) {
        walk(path);
        continue;
      }
      const rel = relative(dir, path).split(sep).join('/');
      const body = readFileSync(path);
      const type = TYPES[extname(name).toLowerCase()] ?? 'application/octet-stream';
      let zipped: Buffer | null | undefined;
      files.set(`/${rel}`, {
        body,
        type,
        cacheControl: rel.startsWith(`${ASSETS_DIR}/`) ? IMMUTABLE_CACHE : REVALIDATE_CACHE,
        gzip: () => {
          if (zipped === undefined) zipped = COMPRESSIBLE.test(type) && body.length > 1024 ? gzipSync(body) : null;
          return zipped;
        },
      });
    }
  };
  walk(dir);
  return files;
}
