/** Replies of the operations routes (health, readiness, version, metrics). */
import { Type } from 'typebox';

export const HealthReply = Type.Object({ success: Type.Literal(true), status: Type.Literal('up') });

export const ReadyReply = Type.Object({
  success: Type.Literal(true),
  status: Type.Literal('ready'),
  version: Type.String({ description: "gpuplane's version (package.json)" }),
  database: Type.Union([Type.Literal('sqlite'), Type.Literal('postgres')], { description: 'the database that answered' }),
  emulator_init: Type.Optional(
    Type.Object(
      {
        scripts: Type.Integer({ description: 'init scripts run (GPUPLANE_EMU_INIT_DIR)' }),
        failed: Type.Array(
          Type.Object({
            script: Type.String(),
            exit_code: Type.Union([Type.Integer(), Type.Null()], { description: 'null: killed by a signal, or it did not start' }),
          }),
          { description: 'the scripts that failed; the emulator is ready all the same' },
        ),
      },
      { description: 'emulator mode with init scripts: what they did' },
    ),
  ),
});

export const VersionReply = Type.Object({ success: Type.Literal(true), version: Type.String() });

export const MetricsReply = Type.String({ description: 'Prometheus text exposition format (version 0.0.4)' });
