/**
 * The console's browser tests (issue 15): Playwright driving Debian's chromium (/usr/bin/chromium; nothing is
 * downloaded), against a real `gpuplane serve` process in emulator mode on a virtual clock, one per test file
 * (e2e/fixtures.ts). One worker: one browser at a time beside the rest of `npm test` on two cores.
 * scripts/run-tests.mjs runs it after the node tests. A missing chromium fails the run: it never skips.
 */
import { defineConfig } from '@playwright/test';

export const CHROMIUM = process.env.GPUPLANE_CHROMIUM ?? '/usr/bin/chromium';

export default defineConfig({
  testDir: './e2e',
  testMatch: '*.spec.ts',
  fullyParallel: false,
  workers: 1,
  retries: 0,
  timeout: 60_000,
  expect: { timeout: 10_000 },
  reporter: [['list']],
  outputDir: '../.test-output/console/results',
  use: {
    browserName: 'chromium',
    launchOptions: { executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-dev-shm-usage'] },
    viewport: { width: 1280, height: 800 },
    trace: 'off',
    screenshot: 'only-on-failure',
  },
});
