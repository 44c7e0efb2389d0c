/**
 * The console's one API client: the project's SDK (src/sdk), as the CLI and SDK users have it. In the browser it
 * authenticates with the HttpOnly session cookie (sent by fetch on same-origin requests), never with a key it can
 * read, and sends the CSRF header the server requires of every cookie-authenticated change (src/platform/auth.ts).
 */
import { createClient, GpuplaneError } from '../../../src/sdk/index.js';
import { humanMessage } from './messages.js';

/** The header a cross-site form cannot send (src/platform/auth.ts `CSRF_HEADER`). */
export const CSRF_HEADERS = { 'x-gpuplane-csrf': '1' };

/** Fired when the server answers 401: the session expired or was ended elsewhere (lib/session.tsx signs out). */
export const SIGNED_OUT_EVENT = 'gpuplane:signed-out';

const watchedFetch = async (input: string, init?: RequestInit): Promise<Response> => {
  const res = await fetch(input, init);
  if (res.status === 401) window.dispatchEvent(new Event(SIGNED_OUT_EVENT));
  return res;
};

export const api = createClient({ url: location.origin, headers: CSRF_HEADERS, maxRetries: 1, fetch: watchedFetch });
export type Api = typeof api;

/** The words to show for a failed call: the API's `msg` (its schema messages as a sentence), never a JSON dump. */
export function errorText(err: unknown): string {
  if (err instanceof GpuplaneError) return humanMessage(err.msg);
  if (err instanceof Error) return err.message;
  return String(err);
}

export { GpuplaneError };
