/**
 * TypeBox schemas of `/_emu/transitions` and `/_emu/instances/{id}/advance` (issue 34 item 4: transitions under
 * control), exported so the SDK takes its types from what the server validates.
 */
import { Type } from 'typebox';
import { Id } from '../../platform/schemas.js';

/** The longest delay a rule may set: a year of service time. */
export const MAX_DELAY_S = 365 * 86_400;

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);

export const TransitionBody = Type.Object({
  kind: Type.Optional(Type.Literal('instance', { description: "the resource kind: 'instance' (the simulated host's work for an instance: create/start → loading → running); the default" })),
  instance_id: Type.Optional(Id({ description: "one instance's rule, overriding the kind's" })),
  mode: Type.Union([Type.Literal('immediate'), Type.Literal('delay'), Type.Literal('manual'), Type.Literal('default')], {
    description: "immediate: running at the host's first pass, with no pull; delay: running `seconds` after the change; manual: loading until advanced; default: the seeded timing (GPUPLANE_SIM_BOOT_SECONDS)",
  }),
  seconds: Type.Optional(Type.Number({ minimum: 0, maximum: MAX_DELAY_S, description: 'delay only: seconds of service time from the change to running' })),
}, { additionalProperties: false });

export const Transition = Type.Object({
  kind: Type.String(),
  instance_id: Nullable(Type.Integer({ description: "null: the kind's rule" })),
  mode: Type.String(),
  seconds: Nullable(Type.Number()),
  updated_at: Type.Number(),
});

export const SlowPull = Type.Object({
  ref: Type.String({ description: 'the host event that opened it' }),
  machine_id: Type.Integer(),
  pull_seconds: Type.Number(),
  until: Nullable(Type.Number({ description: 'null: until the event ends' })),
});

export const TransitionReply = Type.Object({ success: Type.Literal(true), transition: Transition });
export const TransitionsReply = Type.Object({
  transitions: Type.Array(Transition),
  slow_pulls: Type.Array(SlowPull, { description: 'slow-pull windows open now (host events)' }),
  default_boot_seconds: Type.Object({ min: Type.Number(), max: Type.Number() }, { description: 'the seeded timing (GPUPLANE_SIM_BOOT_SECONDS)' }),
});
export const TransitionsClearQuery = Type.Object({
  instance_id: Type.Optional(Id({ description: "only this instance's rule" })),
}, { additionalProperties: false });
export const TransitionsClearReply = Type.Object({ success: Type.Literal(true), removed: Type.Integer() });

export const AdvanceInstanceParams = Type.Object({ id: Id() });
export const AdvanceInstanceReply = Type.Object({
  success: Type.Literal(true),
  instance_id: Type.Integer(),
  actual_status: Nullable(Type.String({ description: 'the instance after the step (null: provisioning)' })),
});
