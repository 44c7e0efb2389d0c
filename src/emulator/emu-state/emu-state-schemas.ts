/**
 * Issue 34 (state): the saved world's document (`GET /_emu/state`, `PUT /_emu/state`, `gpuplane emu save|restore`,
 * GPUPLANE_EMU_STATE). Exported so the SDK takes its types from what the server validates.
 */
import { Type, type Static } from 'typebox';

export const STATE_FORMAT = 'gpuplane-emulator-state';
export const STATE_VERSION = 1;
/**
 * The largest document `PUT /_emu/state` takes (the API's other routes take 1 MiB): a world of thousands of machines
 * and their GPUs, instances, charges and events is tens of MiB of JSON.
 */
export const STATE_BODY_LIMIT = 256 * 1024 * 1024;

const Rows = Type.Record(Type.String(), Type.Array(Type.Record(Type.String(), Type.Unknown())), {
  description: 'Every table\'s rows, by table name: each row an object of column → value (sealed secrets as {"$sealed": …})',
});

export const StateDocument = Type.Object(
  {
    format: Type.String({ description: `Always "${STATE_FORMAT}"` }),
    version: Type.Integer({ description: `The document's version (${STATE_VERSION})` }),
    saved_at: Type.Optional(Type.Number({ description: 'The service clock when saved, Unix seconds' })),
    saved_from: Type.Optional(Type.String({ description: 'The database it was saved from (sqlite or postgres); any loads it' })),
    clock: Type.Optional(
      Type.Object({ kind: Type.String(), now: Type.Number() }, { description: 'The clock when saved; a virtual clock is put back there on load' }),
    ),
    sequences: Type.Optional(Type.Record(Type.String(), Type.Integer({ minimum: 0 }), { description: 'The last id each table has handed out' })),
    rows: Rows,
  },
  { additionalProperties: true },
);
export type StateDocument = Static<typeof StateDocument>;

export const StateLoaded = Type.Object({
  success: Type.Boolean(),
  tables: Type.Integer({ description: 'Tables the document had rows for' }),
  rows: Type.Integer({ description: 'Rows loaded' }),
  clock: Type.Object({ kind: Type.String(), now: Type.Number() }),
});
export type StateLoaded = Static<typeof StateLoaded>;
