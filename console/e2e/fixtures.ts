/**
 * What every browser test file shares: a real gpuplane process (emulator mode, virtual clock, SQLite in memory) for
 * the whole file, started as `npm start` starts it (bin/gpuplane.mjs serve), an admin key for the emulator control
 * API (the outbox's codes, the clock), page screenshots, and the accessibility scan.
 */
import { test as base, expect, type Page } from '@playwright/test';
import AxeBuilder from '@axe-core/playwright';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '..', '..');
/** Where the run's screenshots go (gitignored). */
export const SCREENS = join(ROOT, '.test-output', 'console', 'screens');
const ADMIN_KEY = 'gpk_console_e2e_admin_key_0123456789';
const START_TIMEOUT_MS = 60_000;
/** The narrowest width the console supports (a phone): screenshots are taken at it, and no page may be wider. */
const NARROW = 390;

export interface Server {
  url: string;
  adminKey: string;
  /** A JSON request with the admin key (or `key`); throws on an error reply. */
  api<T = any>(method: string, path: string, body?: unknown, key?: string): Promise<T>;
  /** Moves the virtual clock. */
  advance(seconds: number): Promise<void>;
  /** The newest code the emulator "sent" to this address (e-mail or SMS). */
  lastCode(to: string): Promise<string>;
}

async function startServer(): Promise<{ server: Server; stop(): Promise<void> }> {
  const cwd = mkdtempSync(join(tmpdir(), 'gpuplane-console-e2e-'));
  const child: ChildProcess = spawn(process.execPath, [join(ROOT, 'bin', 'gpuplane.mjs'), 'serve', '--port', '0'], {
    cwd,
    env: {
      ...process.env,
      GPUPLANE_MODE: 'emulator',
      GPUPLANE_CLOCK: 'virtual',
      GPUPLANE_DATABASE_URL: 'sqlite::memory:',
      GPUPLANE_BOOTSTRAP_API_KEY: ADMIN_KEY,
      GPUPLANE_SIM_MACHINES: '12',
      GPUPLANE_LOG_LEVEL: 'info',
      GPUPLANE_LOG_FORMAT: 'json',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`gpuplane did not start:\n${out}`)), START_TIMEOUT_MS);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /"port":(\d+)[^\n]*"msg":"gpuplane listening on /.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    child.once('exit', (code) => reject(new Error(`gpuplane exited (${code}) before listening:\n${out}`)));
  });
  const url = `http://127.0.0.1:${port}`;
  const api = async (method: string, path: string, body?: unknown, key = ADMIN_KEY) => {
    const res = await fetch(url + path, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = await res.json();
    if (!res.ok || json.success === false) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
  const server: Server = {
    url,
    adminKey: ADMIN_KEY,
    api,
    advance: async (seconds) => void (await api('POST', '/_emu/clock/advance', { seconds })),
    lastCode: async (to) => {
      const { messages } = await api('GET', `/_emu/outbox?to=${encodeURIComponent(to)}`);
      const code = messages.at(-1)?.code;
      if (!code) throw new Error(`no code was sent to ${to}`);
      return code;
    },
  };
  const stop = async () => {
    if (child.exitCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(cwd, { recursive: true, force: true });
  };
  return { server, stop };
}

export const test = base.extend<{ screens: (name: string) => Promise<void>; axe: () => Promise<void>; csp: void }, { server: Server }>({
  server: [
    async ({}, use) => {
      const { server, stop } = await startServer();
      await use(server);
      await stop();
    },
    { scope: 'worker' },
  ],
  baseURL: async ({ server }, use) => use(server.url),
  /** Every test: the page's Content-Security-Policy (src/webconsole/) is never violated, and no script error is thrown. */
  csp: [
    async ({ page }, use) => {
      const problems: string[] = [];
      page.on('console', (m) => {
        if (m.type() === 'error' && /Content Security Policy/i.test(m.text())) problems.push(m.text());
      });
      page.on('pageerror', (e) => problems.push(`uncaught: ${e.message}`));
      await use();
      expect(problems).toEqual([]);
    },
    { auto: true },
  ],
  /**
   * Saves a full-page screenshot of the page as it is now, at both widths the console supports, and checks that at
   * 390 px the page is no wider than the screen (`document.documentElement.scrollWidth <= 390`).
   */
  screens: async ({ page }, use) => {
    mkdirSync(SCREENS, { recursive: true });
    await use(async (name) => {
      const size = page.viewportSize();
      await page.screenshot({ path: join(SCREENS, `${name}-1280.png`), fullPage: true });
      await page.setViewportSize({ width: NARROW, height: 844 });
      await page.screenshot({ path: join(SCREENS, `${name}-390.png`), fullPage: true });
      // At 390 px nothing may make the page wider than the screen (issue 15): wide content wraps, and tables scroll
      // inside their own `.table-wrap`. On failure the message names the elements that reach past the right edge.
      const wide = await page.evaluate((limit) => {
        const culprits = [...document.querySelectorAll('body *')]
          // Past the edge: the element's box, or (text that cannot wrap) its content.
          .filter((el) => {
            const r = el.getBoundingClientRect();
            const scrolls = getComputedStyle(el).overflowX !== 'visible';
            return r.right > limit + 0.5 || (!scrolls && el.scrollWidth > el.clientWidth + 1 && r.left + el.scrollWidth > limit + 0.5);
          })
          .filter((el) => {
            // Content that a scrolling region of its own (a `.table-wrap`) holds does not widen the page, unless it is
            // positioned against something outside that region (an absolutely positioned `.sr-only` escapes it).
            let escapes = ['absolute', 'fixed'].includes(getComputedStyle(el).position);
            for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
              const style = getComputedStyle(a);
              if (escapes && style.position !== 'static') escapes = false;
              if (!escapes && style.overflowX !== 'visible') return false;
            }
            return true;
          })
          .slice(-8)
          .map((el) => `${el.tagName.toLowerCase()}${el.className ? '.' + String(el.className).trim().split(/\s+/).join('.') : ''} (right ${Math.round(el.getBoundingClientRect().right)})`);
        return { scrollWidth: document.documentElement.scrollWidth, culprits };
      }, NARROW);
      expect(wide.scrollWidth, `${name} at ${NARROW} px is ${wide.scrollWidth} px wide: ${wide.culprits.join(', ')}`).toBeLessThanOrEqual(NARROW);
      if (size) await page.setViewportSize(size);
    });
  },
  /** The accessibility scan: no serious or critical axe-core violation on the page as it is now. */
  axe: async ({ page }, use) => {
    await use(async () => {
      const result = await new AxeBuilder({ page }).analyze();
      const bad = result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
      expect(bad.map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`)).toEqual([]);
    });
  },
});

export { expect };

/** Signs up through the console and verifies the address with the code from the emulator's outbox; returns the e-mail. */
export async function signUpAndVerify(page: Page, server: Server, email: string, password: string): Promise<void> {
  await page.goto('/signup');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Create account' }).click();
  await expect(page.getByRole('heading', { name: 'Verify your e-mail' })).toBeVisible();
  await page.getByLabel('Verification code').fill(await server.lastCode(email));
  await page.getByRole('button', { name: 'Verify e-mail' }).click();
  await expect(page.getByText('E-mail address verified')).toBeVisible();
}

/** Logs in through the sign-in page (no second factor). */
export async function logIn(page: Page, email: string, password: string): Promise<void> {
  await page.goto('/login');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await expect(page.getByRole('navigation', { name: 'Main' })).toBeVisible();
}
