// Loaded first into each test file's process (run-tests.mjs passes `--import` to `node --test`, which gives its flags
// to the processes it starts, one per file): at exit, the file's wall and CPU seconds are appended to
// GPUPLANE_TEST_TIMES_LOG as `wall cpu path`. A reporter cannot tell them: a test's `file` is where `test()` was
// called, test/helpers/harness.ts for every forEachDialect suite. CPU time is the steadier figure on a shared machine.
import { appendFileSync } from 'node:fs';

const log = process.env.GPUPLANE_TEST_TIMES_LOG;
if (log && !process.execArgv.includes('--test') && process.argv[1]) {
  process.on('exit', () => {
    const cpu = process.cpuUsage();
    appendFileSync(log, `${process.uptime().toFixed(1)} ${((cpu.user + cpu.system) / 1e6).toFixed(1)} ${process.argv[1]}\n`);
  });
}
