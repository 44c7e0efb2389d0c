/**
 * TypeBox schemas of the serverless routes (spec: Create serverless endpoint; contract §3), exported so the SDK takes
 * its request and reply types from what the server validates (`import type` + `Static<>`). Endpoints, workergroups
 * and decisions are open objects in the replies; the SDK adds the service's types to these.
 */
import { Type } from 'typebox';
import { Id } from '../platform/schemas.js';

const Obj = Type.Object({}, { additionalProperties: true });
export const ServerlessOk = Type.Object({ success: Type.Boolean(), msg: Type.String() });
export const IdParams = Type.Object({ id: Id() });

/** The client sends every key, null when unset (client-compat: Serverless). */
// One schema with both types: as a union, type coercion would turn null into 0 (or 0 into null) on the way.
const num = (o: Record<string, unknown> = {}) => Type.Optional(Type.Unsafe<number | null>({ type: ['number', 'null'], ...o }));
const int = (o: Record<string, unknown> = {}) => Type.Optional(Type.Unsafe<number | null>({ type: ['integer', 'null'], ...o }));
const str = (max: number) => Type.Optional(Type.Unsafe<string | null>({ type: ['string', 'null'], maxLength: max }));

export const EndpointBody = Type.Object(
  {
    min_load: num({ minimum: 0 }), min_cold_load: num({ minimum: 0 }), target_util: num(), cold_mult: num({ minimum: 0 }),
    cold_workers: int({ minimum: 0 }), max_workers: int({ minimum: 1 }), endpoint_name: str(128),
    max_queue_time: num({ minimum: 0 }), target_queue_time: num({ minimum: 0 }), inactivity_timeout: num({ minimum: 0 }),
  },
  { additionalProperties: true },
);
export const WorkergroupBody = Type.Object(
  {
    min_load: num({ minimum: 0 }), target_util: num(), cold_mult: num({ minimum: 0 }), cold_workers: int({ minimum: 0 }),
    max_workers: int({ minimum: 1 }), test_workers: int({ minimum: 0 }), template_hash: str(128), template_id: int(),
    search_params: str(4096), launch_args: str(4096), gpu_ram: num({ minimum: 0 }), endpoint_name: str(128), endpoint_id: int({ minimum: 1 }),
  },
  { additionalProperties: true },
);

export const CreateEndpointReply = Type.Object({ success: Type.Boolean(), result: Type.Integer() });
export const EndpointsReply = Type.Object({ success: Type.Boolean(), results: Type.Array(Obj) });
export const CreateWorkergroupReply = Type.Object({ success: Type.Boolean(), id: Type.Integer() });
export const WorkergroupsReply = Type.Object({ success: Type.Boolean(), results: Type.Array(Obj) });
export const DecisionsReply = Type.Object({ success: Type.Boolean(), decisions: Type.Array(Obj) });

/** Largest load one endpoint may be given (perf units per second). */
const MAX_LOAD = 1e9;

/** `POST /_emu/endpoints/{id}/load` (emulator): the load the simulated autoscaler follows from its next run. */
export const EmuLoadBody = Type.Object({ load: Type.Number({ minimum: 0, maximum: MAX_LOAD }) });
export const EmuLoadReply = Type.Object({ success: Type.Boolean(), load: Type.Number() });
