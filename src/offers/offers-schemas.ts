import { Type } from 'typebox';

/** `POST /api/v0/bundles/` (and the older GET form): each offer carries every field of the offer table. */
export const OffersReply = Type.Object({
  offers: Type.Array(Type.Object({ id: Type.Integer() }, { additionalProperties: true })),
});

/** `GET /api/v0/bundles/?q=<json>`: the filter object as a JSON string. */
export const BundlesQuery = Type.Object({ q: Type.Optional(Type.String({ maxLength: 65536 })) }, { additionalProperties: true });
