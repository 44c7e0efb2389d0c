import type { FastifyReply } from 'fastify';
import type { TypedApp } from '../platform/http.js';
import { replyBytes, type ReplyBytes } from '../platform/reply-bytes.js';
import { ErrorReply } from '../platform/schemas.js';
import type { OffersService } from './offers-service.js';
import { BundlesQuery, OffersReply, SearchAsksBody } from './offers-schemas.js';

const errors = { 400: ErrorReply, 401: ErrorReply, 403: ErrorReply };

/**
 * Sends JSON the service has already serialized (per-offer fragments, offer-json.ts) as bytes (platform/reply-bytes.ts):
 * Fastify sends them as they are, so the schema above documents the reply without running a serializer over ~90 KB
 * per search.
 */
const jsonTextSender = (bytes: ReplyBytes) => (reply: FastifyReply, text: string) =>
  reply.type('application/json').send(bytes.bytesFor(reply.raw, text));

export async function offersRoutes(app: TypedApp, { offers }: { offers: OffersService }): Promise<void> {
  const sendJsonText = jsonTextSender(replyBytes());
  app.post(
    '/api/v0/bundles/',
    {
      config: { category: 'misc' },
      schema: {
        summary: 'Search offers',
        description:
          'The body is the filter object: `{<field>: {<op>: value}}` with op eq, neq, lt, lte, gt, gte, in, notin; ' +
          'plus `order` ([[field, "asc"|"desc"]…]), `type` (ondemand, on-demand, bid, reserved), `limit`, `allocated_storage` (GB).',
        tags: ['offers'],
        response: { 200: OffersReply, ...errors },
      },
    },
    async (request, reply) => sendJsonText(reply, await offers.searchText(request.body)),
  );

  // `vastai search offers --new`: the same filter object under `q` (docs/spec/client-compat-more.md §a "Offer search, new style").
  app.put(
    '/api/v0/search/asks/',
    {
      config: { category: 'misc' },
      schema: {
        summary: 'Search offers (new style): `{select_cols: ["*"], q: <the bundles filter object>}`',
        tags: ['offers'],
        body: SearchAsksBody,
        response: { 200: OffersReply, ...errors },
      },
    },
    async (request, reply) => sendJsonText(reply, await offers.searchAsksText(request.body)),
  );

  // Older vastai releases send the same query as `GET /api/v0/bundles?q=<json>`.
  app.get(
    '/api/v0/bundles/',
    {
      config: { category: 'misc' },
      schema: {
        summary: 'Search offers (older clients: the filter object as the JSON query parameter `q`)',
        tags: ['offers'],
        querystring: BundlesQuery,
        response: { 200: OffersReply, ...errors },
      },
    },
    async (request, reply) => sendJsonText(reply, await offers.searchJsonText((request.query as { q?: string }).q)),
  );
}
