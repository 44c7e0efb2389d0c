import { Type } from 'typebox';
import { CreateBody, CreateReply } from '../instances/instances-schemas.js';

const { price: _price, ...createFields } = CreateBody.properties;

/**
 * `PUT /api/v0/launch_instance/` (docs/spec/client-compat-more.md §c "Launch the best offer"): the instance creation fields of
 * `PUT /asks/{id}/` (no `price`: an on-demand rental) plus `q`, the bundles filter object the offer is chosen by.
 */
export const LaunchBody = Type.Object(
  {
    ...createFields,
    q: Type.Unknown({ description: 'the POST /api/v0/bundles/ filter object, with order, type (on-demand), limit, allocated_storage' }),
  },
  { additionalProperties: true },
);

/** The creation reply, and the offer it rented. */
export const LaunchReply = Type.Object({ ...CreateReply.properties, offer_id: Type.Integer({ description: 'the offer rented' }) });
