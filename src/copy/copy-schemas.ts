/**
 * `vastai copy` and `vastai cancel copy`'s bodies and replies (client-compat-more §c; client-compat-connect
 * "copy SRC DST"). The ids are what the client's `parse_vast_url` makes of what was typed (a string, an integer, or
 * null), so they are taken as any JSON value and read by copy-locations.ts. Bodies stay open: the client's keys are
 * known, but the SDKs of other versions add their own.
 */
import { Type } from 'typebox';

const NStr = (max: number) => Type.Optional(Type.Unsafe<string | null>({ type: ['string', 'null'], maxLength: max }));

/** `PUT /commands/rsync/` and `/commands/copy_direct/`: `{client_id: "me", src_id, dst_id, src_path, dst_path}`. */
export const CopyBody = Type.Object(
  {
    client_id: Type.Optional(Type.Unknown()),
    src_id: Type.Optional(Type.Unknown()),
    dst_id: Type.Optional(Type.Unknown()),
    src_path: NStr(4096),
    dst_path: NStr(4096),
  },
  { additionalProperties: true },
);

/**
 * `success`, and for a copy with a local side, where the client's rsync connects over SSH: `dst_addr`/`dst_port`
 * (upload) or `src_addr`/`src_port` (download); the client reads them with `rj["dst_port"]` and fails without them.
 */
export const CopyReply = Type.Object({
  success: Type.Literal(true),
  msg: Type.String(),
  dst_addr: Type.Optional(Type.String({ description: 'The host the client\'s rsync reaches the destination instance at (the SSH gateway)' })),
  dst_port: Type.Optional(Type.Integer({ description: 'The destination instance\'s copy port on that host (ssh -p)' })),
  src_addr: Type.Optional(Type.String({ description: 'The host the client\'s rsync reaches the source instance at (the SSH gateway)' })),
  src_port: Type.Optional(Type.Integer({ description: 'The source instance\'s copy port on that host (ssh -p)' })),
});

/** `DELETE /commands/copy_direct/` `{client_id: "me", dst_id}`: the destination as typed, a string. */
export const CancelCopyBody = Type.Object(
  { client_id: Type.Optional(Type.Unknown()), dst_id: Type.Optional(Type.Unknown()) },
  { additionalProperties: true },
);

export const CancelCopyReply = Type.Object({ success: Type.Literal(true), msg: Type.String() });
