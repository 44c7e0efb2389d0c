/**
 * TypeBox schemas of the volume routes (contract §3), exported so the SDK takes its request and reply types from what
 * the server validates (`import type` + `Static<>`). Offers and volumes are open objects: their fields are listed in
 * volume-offers.ts and volumes-service.ts, and the SDK adds those types to these.
 */
import { Type } from 'typebox';

const Obj = Type.Object({}, { additionalProperties: true });

export const VolumeSearchReply = Type.Object({ offers: Type.Array(Obj) });

/** Longest volume name (`PUT /volumes/`, and `volume_info.name` of an instance creation). */
export const MAX_VOLUME_NAME_CHARS = 128;
/**
 * `PUT /volumes/`: open; vastai sends `{size, id, name?}` where `id` is the volume offer (declared, so not refused as
 * a column). Owner and system columns (`user_id` …) are 400s (platform/validation.ts).
 */
export const CreateVolumeBody = Type.Object(
  {
    id: Type.Integer({ minimum: 1, description: 'volume offer id (from search volumes)' }),
    size: Type.Number({ exclusiveMinimum: 0, maximum: 1e7, description: 'GB' }),
    name: Type.Optional(Type.Union([Type.String({ maxLength: MAX_VOLUME_NAME_CHARS }), Type.Null()])),
  },
  { additionalProperties: true },
);
export const CreateVolumeReply = Type.Object({ success: Type.Boolean(), volume_id: Type.Integer(), id: Type.Integer(), msg: Type.String() });

// The client sends owner=me and type=all|local|network; every volume here is local.
export const ListVolumesQuery = Type.Object({}, { additionalProperties: true });
export const VolumesReply = Type.Object({ success: Type.Boolean(), volumes: Type.Array(Obj) });

export const DeleteVolumeQuery = Type.Object({ id: Type.Optional(Type.Integer({ minimum: 1 })) }, { additionalProperties: true });
export const DeleteVolumeReply = Type.Object({ success: Type.Boolean(), msg: Type.String() });
