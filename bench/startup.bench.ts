// Time from process start (`node bin/gpuplane.mjs serve`, as `npm start` runs it) to the first answered request:
// on a new SQLite database (migrations, owner account) and restarting on an existing one.
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { defineBench, median, startGpuplane } from './lib.js';

/** Starts measured per case; the median is reported. */
const STARTS = 3;
const TARGET_MS = 1500;

export default defineBench({
  name: 'startup',
  description: 'process start to first answered GET /api/v0/users/current (SQLite)',
  async run(ctx) {
    const fresh: number[] = [];
    const restart: number[] = [];
    // CPU the process used until its first answer: what start-up costs however busy the machine is.
    const freshCpu: number[] = [];
    const restartCpu: number[] = [];
    for (let i = 0; i < STARTS; i++) {
      const dir = mkdtempSync(join(ctx.tmpDir, 'start-'));
      const first = await startGpuplane(ctx, { dir, settle: false });
      await first.stop();
      fresh.push(first.startupMs);
      freshCpu.push(first.startupCpuMs);
      const again = await startGpuplane(ctx, { dir, settle: false });
      await again.stop();
      restart.push(again.startupMs);
      restartCpu.push(again.startupCpuMs);
      ctx.log(
        `  start ${i + 1}: new database ${Math.round(first.startupMs)} ms (${Math.round(first.startupCpuMs)} ms CPU), ` +
          `existing database ${Math.round(again.startupMs)} ms (${Math.round(again.startupCpuMs)} ms CPU)`,
      );
    }
    return [
      { name: 'new database', value: Math.round(median(fresh)), unit: 'ms', target: { op: '<=', value: TARGET_MS } },
      { name: 'existing database', value: Math.round(median(restart)), unit: 'ms', target: { op: '<=', value: TARGET_MS } },
      { name: 'new database, CPU used', value: Math.round(median(freshCpu)), unit: 'ms' },
      { name: 'existing database, CPU used', value: Math.round(median(restartCpu)), unit: 'ms' },
    ];
  },
});
