/**
 * TypeBox schemas of the emulator's host events (`/_emu/events`, issue 34 item 3), exported so the SDK takes its
 * request and reply types from what the server validates.
 */
import { Type, type Static, type TSchema } from 'typebox';
import { Id } from '../../platform/schemas.js';
import { MAX_GPUS_PER_MACHINE } from '../../machines/machines-types.js';

export const EVENT_KINDS = ['outbid_wave', 'host_offline', 'slow_pull', 'gpu_lost'] as const;
export type EventKind = (typeof EVENT_KINDS)[number];
/** The emulator fault a `host_offline` puts its machines under (contract §2 `POST /_emu/faults`). */
export const OFFLINE_FAULTS = ['no_heartbeat', 'offline', 'unknown'] as const;

/** Longest wait or duration of an event: ten years, in seconds. */
const MAX_SPAN_S = 10 * 365 * 86400;
/** Most machines one event names. */
export const MAX_EVENT_MACHINES = 10_000;

const KindSchema = Type.Union([Type.Literal('outbid_wave'), Type.Literal('host_offline'), Type.Literal('slow_pull'), Type.Literal('gpu_lost')]);
const OfflineFaultSchema = Type.Union([Type.Literal('no_heartbeat'), Type.Literal('offline'), Type.Literal('unknown')], {
  description: 'host_offline: the emulator fault its machines go under (default no_heartbeat: noticed at the heartbeat timeout)',
});

export const EventBody = Type.Object(
  {
    kind: KindSchema,
    at: Type.Optional(Type.Number({ minimum: 0, description: 'Unix seconds of the service clock when it happens (not before now)' })),
    after: Type.Optional(Type.Number({ minimum: 0, maximum: MAX_SPAN_S, description: 'seconds from now (one of at/after; default: now)' })),
    machine_ids: Type.Optional(Type.Array(Id(), { minItems: 1, maxItems: MAX_EVENT_MACHINES, description: 'default: drawn from the fleet by the seed' })),
    fraction: Type.Optional(Type.Number({ minimum: 0, maximum: 1, description: 'share of the fleet drawn (instead of machine_ids)' })),
    machines: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_EVENT_MACHINES, description: 'how many machines drawn (default 1)' })),
    duration: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: MAX_SPAN_S, description: 'seconds until it ends by itself; absent: until cleared' })),
    pull_seconds: Type.Optional(Type.Number({ minimum: 0, maximum: 86_400, description: 'slow_pull: how long a pull takes during it (default 300)' })),
    gpu_index: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_GPUS_PER_MACHINE - 1, description: 'gpu_lost: the GPU that falls off the bus (default 0)' })),
    fault: Type.Optional(OfflineFaultSchema),
    seed: Type.Optional(Type.Integer({ minimum: 0, maximum: 2 ** 32 - 1 })),
  },
  { additionalProperties: false },
);
export type EventInput = Static<typeof EventBody>;

const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);

export const HostEvent = Type.Object({
  id: Type.Integer(),
  kind: KindSchema,
  at: Type.Number({ description: 'when it happens, Unix seconds' }),
  ends_at: Nullable(Type.Number({ description: 'when its effect ends by itself, or null' })),
  machine_ids: Type.Array(Type.Integer()),
  duration: Nullable(Type.Number()),
  pull_seconds: Nullable(Type.Number()),
  gpu_index: Nullable(Type.Integer()),
  fault: Type.Union([OfflineFaultSchema, Type.Null()]),
  fraction: Nullable(Type.Number()),
  machines: Nullable(Type.Integer()),
  seed: Type.Integer({ description: 'the seed the machines were drawn with: give it again to draw the same ones' }),
  state: Type.Union([Type.Literal('pending'), Type.Literal('active'), Type.Literal('done')]),
  instance_ids: Type.Array(Type.Integer(), { description: 'the instances it acted on (the bid instances a wave outbid)' }),
  created_at: Type.Number(),
  started_at: Nullable(Type.Number()),
  ended_at: Nullable(Type.Number()),
});
export type HostEventT = Static<typeof HostEvent>;

export const EventReply = Type.Object({ success: Type.Boolean(), event: HostEvent });
export const EventsReply = Type.Object({ events: Type.Array(HostEvent) });
export const EventsClearedReply = Type.Object({ success: Type.Boolean(), events: Type.Array(HostEvent, { description: 'the events cleared, as they ended' }) });
export const EventParams = Type.Object({ id: Id() });
