/**
 * What counts as a plausible OpenSSH public key: `<type> <base64 body> [comment]` on one line, where the body
 * decodes to an SSH wire blob that starts with the same type name (RFC 4253 §6.6). This catches a pasted private
 * key, a fingerprint, a truncated paste or a key with its type swapped, without parsing the key material itself.
 * The one parser of public keys, public to other features: the account's keys (`/ssh/`) and the keys the instances
 * feature attaches to an instance (`/instances/{id}/ssh/`) follow the same rules and are stored in the same
 * normalized form.
 */
import { badRequest } from '../platform/errors.js';

import { SSH_KEY_MAX_CHARS } from './ssh-keys-types.js';

export { SSH_KEY_MAX_CHARS };

/** The key types OpenSSH accepts in authorized_keys (no ssh-ed448: OpenSSH has no such key type). */
export const SSH_KEY_TYPES = [
  'ssh-rsa',
  'ssh-dss',
  'ssh-ed25519',
  'ecdsa-sha2-nistp256',
  'ecdsa-sha2-nistp384',
  'ecdsa-sha2-nistp521',
  'sk-ssh-ed25519@openssh.com',
  'sk-ecdsa-sha2-nistp256@openssh.com',
] as const;

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

export interface ParsedSshKey {
  type: string;
  body: string;
  comment: string;
  /** `type body[ comment]`: what is stored and shown. */
  normalized: string;
}

/** Parses and checks a public key line; throws a 400 that says what is wrong. */
export function parseSshPublicKey(input: string): ParsedSshKey {
  const text = input.trim();
  if (text === '') throw badRequest('ssh_key is required');
  if (text.length > SSH_KEY_MAX_CHARS) throw badRequest(`ssh_key is longer than ${SSH_KEY_MAX_CHARS} characters`);
  if (/[\r\n]/.test(text)) throw badRequest('ssh_key must be a single line: the contents of your .pub file');
  if (text.includes('PRIVATE KEY')) throw badRequest('ssh_key looks like a private key: send the public key (.pub) only');
  const [type, body, ...rest] = text.split(/\s+/);
  if (!(SSH_KEY_TYPES as readonly string[]).includes(type)) {
    throw badRequest(`ssh_key must be an OpenSSH public key starting with one of ${SSH_KEY_TYPES.join(', ')}`);
  }
  if (!body || !BASE64.test(body) || body.length % 4 !== 0) throw badRequest('ssh_key: the key body is not valid base64');
  const blob = Buffer.from(body, 'base64');
  const nameLength = blob.length >= 4 ? blob.readUInt32BE(0) : -1;
  const embedded = nameLength > 0 && 4 + nameLength < blob.length ? blob.subarray(4, 4 + nameLength).toString('latin1') : null;
  if (embedded !== type) throw badRequest(`ssh_key: the key body is not a ${type} public key`);
  const comment = rest.join(' ');
  return { type, body, comment, normalized: comment ? `${type} ${body} ${comment}` : `${type} ${body}` };
}
