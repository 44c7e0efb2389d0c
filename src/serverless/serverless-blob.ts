/**
 * The blob store that keeps deployment tarballs (`GPUPLANE_BLOB_STORE_URL`): an S3-compatible bucket. The serverless
 * SDK uploads a tarball itself with a form POST to `upload_url` with `upload_fields` (docs/spec/client-compat-more.md
 * §e, an S3-style presigned POST), and a worker downloads it from `download_url`.
 *
 * The URL names the bucket, path-style (`https://s3.example.com/bucket`) or virtual-hosted
 * (`https://bucket.s3.amazonaws.com`). With credentials in it (`https://ACCESS_KEY:SECRET_KEY@…`, region from
 * `?region=`, default us-east-1) uploads and downloads are signed with AWS Signature Version 4 and expire; without,
 * the bucket itself must accept unsigned uploads (a private network's store).
 */
import { createHash, createHmac } from 'node:crypto';

/** How long an upload form or a download URL stays valid. */
export const BLOB_URL_TTL_S = 3600;
const ALGORITHM = 'AWS4-HMAC-SHA256';

export interface UploadForm {
  upload_url: string;
  upload_fields: Record<string, string>;
}

export interface BlobStore {
  /** The form that uploads `size` bytes to `key`, valid for the store's ttl from `now`. */
  uploadForm(key: string, size: number, now: number): UploadForm;
  /** Where `key` can be downloaded, valid for the store's ttl from `now`. */
  downloadUrl(key: string, now: number): string;
}

const hmac = (key: Buffer | string, text: string) => createHmac('sha256', key).update(text, 'utf8').digest();
const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
/** RFC 3986 encoding, as Signature Version 4 wants it (encodeURIComponent leaves `!'()*`). */
const uriEncode = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/** `20130524T000000Z` and `20130524` of a Unix time. */
function stamps(now: number): { amzDate: string; date: string } {
  const amzDate = new Date(Math.floor(now) * 1000).toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');
  return { amzDate, date: amzDate.slice(0, 8) };
}

/** The Signature Version 4 signing key of a day, region and service. */
export function signingKey(secret: string, date: string, region: string, service: string): Buffer {
  return hmac(hmac(hmac(hmac(`AWS4${secret}`, date), region), service), 'aws4_request');
}

/** The blob store of a configured URL (config.ts has checked it is an http(s) URL); its URLs last `ttl` seconds. */
export function blobStore(url: string, ttl = BLOB_URL_TTL_S): BlobStore {
  const u = new URL(url);
  const access = decodeURIComponent(u.username);
  const secret = decodeURIComponent(u.password);
  const region = u.searchParams.get('region') || 'us-east-1';
  const basePath = u.pathname.replace(/\/+$/, '');
  const origin = `${u.protocol}//${u.host}`;
  const signed = access !== '' && secret !== '';
  const objectPath = (key: string) => `${basePath}/${key.split('/').map(uriEncode).join('/')}`;
  const scope = (date: string) => `${date}/${region}/s3/aws4_request`;

  return {
    uploadForm(key, size, now): UploadForm {
      const upload_url = `${origin}${basePath}/`;
      if (!signed) return { upload_url, upload_fields: { key } };
      const { amzDate, date } = stamps(now);
      const credential = `${access}/${scope(date)}`;
      const policy = Buffer.from(JSON.stringify({
        expiration: new Date((Math.floor(now) + ttl) * 1000).toISOString(),
        conditions: [
          { key },
          { 'x-amz-algorithm': ALGORITHM },
          { 'x-amz-credential': credential },
          { 'x-amz-date': amzDate },
          ['content-length-range', size, size],
        ],
      })).toString('base64');
      const signature = hmac(signingKey(secret, date, region, 's3'), policy).toString('hex');
      return {
        upload_url,
        upload_fields: { key, policy, 'x-amz-algorithm': ALGORITHM, 'x-amz-credential': credential, 'x-amz-date': amzDate, 'x-amz-signature': signature },
      };
    },

    downloadUrl(key, now) {
      const path = objectPath(key);
      if (!signed) return `${origin}${path}`;
      const { amzDate, date } = stamps(now);
      const query = [
        ['X-Amz-Algorithm', ALGORITHM],
        ['X-Amz-Credential', `${access}/${scope(date)}`],
        ['X-Amz-Date', amzDate],
        ['X-Amz-Expires', String(ttl)],
        ['X-Amz-SignedHeaders', 'host'],
      ].map(([k, v]) => `${uriEncode(k)}=${uriEncode(v)}`).sort().join('&');
      const canonical = ['GET', path, query, `host:${u.host}`, '', 'host', 'UNSIGNED-PAYLOAD'].join('\n');
      const toSign = [ALGORITHM, amzDate, scope(date), sha256(canonical)].join('\n');
      const signature = hmac(signingKey(secret, date, region, 's3'), toSign).toString('hex');
      return `${origin}${path}?${query}&X-Amz-Signature=${signature}`;
    },
  };
}
