import { Type } from 'typebox';
import { Id } from '../platform/schemas.js';

const Name = Type.String({ minLength: 1, maxLength: 128 });
const Size = Type.Number({ exclusiveMinimum: 0, maximum: 1_000_000, description: 'GB' });

/** `show overlays`: a bare list (none exist here). */
export const OverlaysReply = Type.Array(Type.Object({
  overlay_id: Type.Integer(), name: Type.String(), internal_subnet: Type.Union([Type.String(), Type.Null()]), cluster_id: Type.Integer(),
  instances: Type.Array(Type.Integer()),
}));
export const CreateOverlayBody = Type.Object({ cluster_id: Id(), name: Name }, { additionalProperties: false });
export const JoinOverlayBody = Type.Object({ name: Name, instance_id: Id() }, { additionalProperties: false });
/** `{"overlay_id": int}` when the argument parses as an integer, else `{"overlay_name": "..."}`. */
export const DeleteOverlayBody = Type.Union([
  Type.Object({ overlay_id: Id() }, { additionalProperties: false }),
  Type.Object({ overlay_name: Name }, { additionalProperties: false }),
]);

/** `show network-disks`: `{data: [...]}` (none exist here). */
export const NetworkDisksReply = Type.Object({
  data: Type.Array(Type.Object({
    cluster_id: Type.Integer(),
    network_disks: Type.Array(Type.Object({ network_disk_id: Type.Integer(), free_space: Type.Number(), total_space: Type.Number() })),
    machine_ids: Type.Array(Type.Integer()),
    mounts: Type.Record(Type.String(), Type.String()),
  })),
});
export const AddNetworkDiskBody = Type.Object({
  machines: Type.Array(Id(), { minItems: 1, maxItems: 1000 }),
  mount_point: Type.String({ minLength: 1, maxLength: 4096 }),
  disk_id: Type.Optional(Id()),
}, { additionalProperties: false });

/** `search network-volumes`: `{offers}` (none exist here). */
export const NetworkVolumeOffersReply = Type.Object({ offers: Type.Array(Type.Object({ id: Type.Integer() }, { additionalProperties: true })) });
export const CreateNetworkVolumeBody = Type.Object({ id: Type.Integer({ minimum: 1 }), size: Size, name: Type.Optional(Type.String({ maxLength: 128 })) }, { additionalProperties: false });
export const ListNetworkVolumeBody = Type.Object({
  disk_id: Id(), price_disk: Type.Number({ minimum: 0, maximum: 1_000_000 }), size: Size, end_date: Type.Optional(Type.Number({ minimum: 0 })),
}, { additionalProperties: false });
export const UnlistNetworkVolumeBody = Type.Object({ id: Type.Integer({ minimum: 1 }) }, { additionalProperties: false });

/** `clone volume SRC DEST`. */
export const CopyVolumeBody = Type.Object({
  src_id: Id({ description: 'your volume' }),
  dst_id: Type.Integer({ minimum: 1, description: 'a volume offer' }),
  size: Type.Optional(Size),
  disable_compression: Type.Optional(Type.Boolean()),
}, { additionalProperties: false });
