/** Replies of the operations routes (health, readiness, version, metrics). */
import { Type } from 'typebox';

export const HealthReply = Type.Object({ success: Type.Literal(true), status: Type.Literal('up') });

export const ReadyReply = Type.Object({
  success: Type.Literal(true),
  status: Type.Literal('ready'),
  version: Type.String({ description: "gpuplane's version (package.json)" }),
  database: Type.Union([Type.Literal('sqlite'), Type.Literal('postgres')], { description: 'the database that answered' }),
});

export const VersionReply = Type.Object({ success: Type.Literal(true), version: Type.String() });

export const MetricsReply = Type.String({ description: 'Prometheus text exposition format (version 0.0.4)' });
