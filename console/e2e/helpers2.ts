/** Shared steps of the part-2 browser tests (not a spec itself): a user made through the emulator, logged in. */
import type { Page } from '@playwright/test';
import { expect, logIn, type Server } from './fixtures.js';

export interface EmuAccount {
  id: number;
  email: string;
  password: string;
  key: string;
}

let n = 0;

/** A verified user made with `POST /_emu/users` (faster than signing up), logged in through the console. */
export async function userLoggedIn(page: Page, server: Server, opts: { admin?: boolean; credit?: number; prefix?: string } = {}): Promise<EmuAccount> {
  const email = `${opts.prefix ?? 'user'}${++n}-${Date.now()}@example.com`;
  const password = 'correct horse battery staple';
  const { user, api_key } = await server.api('POST', '/_emu/users', { email, password, is_admin: opts.admin ?? false, credit: opts.credit ?? 100 });
  await logIn(page, email, password);
  // The console moves from /login to /instances once signed in: wait for it, so a click is not lost to that redirect.
  await expect(page).toHaveURL(/\/instances$/);
  return { id: user.id, email, password, key: api_key };
}

/** The server's clock (virtual), Unix seconds. */
export async function serverNow(server: Server): Promise<number> {
  return (await server.api('GET', '/_emu/clock')).now;
}
