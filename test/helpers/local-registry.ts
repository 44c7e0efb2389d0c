/**
 * A registry for the tests, in-process: no image registry is reachable from CI, and Docker pulls from 127.0.0.0/8
 * over plain HTTP by default (its `Insecure Registries`). It serves one image made here of random layers (so the
 * daemon has none of them already), each blob sent at a set rate, so a real `docker pull` shows real progress. The
 * Registry HTTP API V2's read side only: `/v2/`, manifests and blobs, GET and HEAD.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { tarOfFile } from '../../src/agent/tar-file.js';

const MANIFEST = 'application/vnd.oci.image.manifest.v1+json';
const sha = (b: Buffer) => `sha256:${createHash('sha256').update(b).digest('hex')}`;

export interface LocalRegistry {
  /** `127.0.0.1:<port>/<repo>:<tag>`: what to pull. */
  ref: string;
  /** The layers' sizes, bytes, in order (uncompressed tars: what Docker counts). */
  layerSizes: number[];
  close(): Promise<void>;
}

/** Serves an image of random layers of about `layerMb` MB each, every blob at `bytesPerSecond`. */
export async function startLocalRegistry(opts: { layerMb: number[]; bytesPerSecond: number; repo?: string }): Promise<LocalRegistry> {
  const repo = opts.repo ?? `gpuplane-test/pull-${randomBytes(4).toString('hex')}`;
  const layers = opts.layerMb.map((mb, i) => tarOfFile(`/data/layer-${i}.bin`, randomBytes(Math.round(mb * 1_000_000)), 1_700_000_000));
  const config = Buffer.from(JSON.stringify({
    architecture: 'amd64', os: 'linux', config: {}, rootfs: { type: 'layers', diff_ids: layers.map(sha) },
  }));
  const manifest = Buffer.from(JSON.stringify({
    schemaVersion: 2, mediaType: MANIFEST,
    config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: sha(config), size: config.length },
    layers: layers.map((l) => ({ mediaType: 'application/vnd.oci.image.layer.v1.tar', digest: sha(l), size: l.length })),
  }));
  const blobs = new Map([config, ...layers].map((b) => [sha(b), b]));
  const chunk = 64 * 1024;

  const server: Server = createServer((req, res) => {
    const url = req.url ?? '';
    const head = req.method === 'HEAD';
    const send = (status: number, type: string, body: Buffer, slow = false) => {
      res.writeHead(status, { 'content-type': type, 'content-length': body.length, 'docker-content-digest': sha(body) });
      if (head) return void res.end();
      if (!slow) return void res.end(body);
      let at = 0;
      const step = () => {
        if (res.destroyed) return;
        if (at >= body.length) return void res.end();
        res.write(body.subarray(at, at + chunk));
        at += chunk;
        setTimeout(step, (chunk / opts.bytesPerSecond) * 1000);
      };
      step();
    };
    if (url === '/v2/' || url === '/v2') return send(200, 'application/json', Buffer.from('{}'));
    const m = new RegExp(`^/v2/${repo}/(manifests|blobs)/([^/?]+)$`).exec(url);
    if (m && m[1] === 'manifests') return send(200, MANIFEST, manifest);
    const blob = m && m[1] === 'blobs' ? blobs.get(decodeURIComponent(m[2])) : undefined;
    if (blob) return send(200, 'application/octet-stream', blob, blob !== config);
    res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ errors: [{ code: 'NAME_UNKNOWN', message: url }] }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    ref: `127.0.0.1:${port}/${repo}:1`,
    layerSizes: layers.map((l) => l.length),
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
