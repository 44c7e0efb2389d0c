/**
 * Issue 34 item 5: `gpuplane emu replay FILE` replays a recording (made by an emulator started with
 * GPUPLANE_EMU_RECORD=FILE) against an emulator and reports where its answers differ (exit 1 when any do).
 */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { action, UsageError } from '../context.js';
import { parseRecording, RecordingError, replay, reportText } from '../../emulator/emu-recorder/recorder-replay.js';

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

export function registerEmulatorRecorder(emu: Command): void {
  emu
    .command('replay')
    .description('replay a recording (GPUPLANE_EMU_RECORD) against a fresh emulator and report the answers that differ; exit 1 when any do')
    .argument('<file>', 'the recording (one JSON line per call)')
    .option('--ignore <field>', 'a reply field not compared, anywhere (repeat for more)', collect)
    .option('--ignore-times', 'do not compare time fields (created_at, start_date, …); always so for a recording made with a real clock')
    .addHelpText('after', [
      '',
      'The recording\'s first credential is replaced by this command\'s API key (--api-key, GPUPLANE_API_KEY, or the saved',
      'one): start the fresh emulator with the same bootstrap key, a virtual clock from the same start, and the same',
      '--seed and --sim-machines, and the answers repeat exactly.',
      '',
      'Example:',
      '  gpuplane emu replay session.jsonl --url http://127.0.0.1:8081',
    ].join('\n'))
    .action(
      action(async (ctx, file: string, o: { ignore?: string[]; ignoreTimes?: boolean }) => {
        let text: string;
        try {
          text = readFileSync(file, 'utf8');
        } catch (err) {
          throw new UsageError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
        }
        let parsed: ReturnType<typeof parseRecording>;
        try {
          parsed = parseRecording(text);
        } catch (err) {
          if (err instanceof RecordingError) throw new UsageError(`${file}: ${err.message}`);
          throw err;
        }
        const report = await replay(parsed.calls, parsed.header, {
          url: ctx.url, apiKey: ctx.client.transport.apiKey, ignore: o.ignore, ignoreTimes: o.ignoreTimes, sessionStarts: parsed.sessionStarts,
        });
        ctx.out.print(report, () => reportText(report));
        if (report.differing > 0) ctx.run.exitCode = 1;
      }),
    );
}
