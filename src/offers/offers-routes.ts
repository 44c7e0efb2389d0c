import type { FastifyReply, FastifyRequest } from 'fastify';
import type { TypedApp } from '../platform/http.js';
import { replyBytes, type ReplyBytes } from '../platform/reply-bytes.js';
import { ErrorReply } from '../platform/schemas.js';
import type { OffersService, SearchCaller } from './offers-service.js';
import { BundlesQuery, OffersReply, SearchAsksBody } from './offers-schemas.js';

const errors = { 400: ErrorReply, 401: ErrorReply, 403: ErrorReply, 429: ErrorReply };

/** A caller without any credential is counted by address (the auth hook let it through: `keyOptional`). */
const callerOf = (request: FastifyRequest): SearchCaller => (request.principal ? undefined : { anonymousAddress: request.ip });

/**
 * Sends JSON the service has already serialized (per-offer fragments, offer-json.ts) as bytes (platform/reply-bytes.ts):
 * Fastify sends them as they are, so the schema above documents the reply without running a serializer over ~90 KB
 * per search.
 */
const jsonTextSender = (bytes: ReplyBytes) => (reply: FastifyReply, text: string) =>
  reply.type('application/json').send(bytes.bytesFor(reply.raw, text));

export async function offersRoutes(app: TypedApp, { offers }: { offers: OffersService }): Promise<void> {
  const sendJsonText = jsonTextSender(replyBytes());
  // Vast.ai serves offer search to anyone, and dstack's offer catalogue (gpuhunt's Vast provider) posts to /bundles/
  // with no key (issue 29 item 1); GPUPLANE_OFFER_SEARCH_REQUIRES_KEY makes these routes need one again.
  // A key that is sent is checked as on every route; `misc` bounds scoped keys as before.
  const config = { category: 'misc', keyOptional: offers.anonymousSearch } as const;
  const anonymousNote = offers.anonymousSearch
    ? ' Without an API key it answers too (the same offers), rate-limited per client address (429 `rate_limited`).'
    : '';
  app.post(
    '/api/v0/bundles/',
    {
      config,
      schema: {
        summary: 'Search offers',
        description:
          'The body is the filter object: `{<field>: {<op>: value}}` with op eq, neq, lt, lte, gt, gte, in, notin; ' +
          'plus `order` ([[field, "asc"|"desc"]…]), `type` (ondemand, on-demand, bid, reserved), `limit`, `allocated_storage` (GB). ' +
          '`geolocation` takes a two-letter country code (`US` matches "California, US") or a region name (North_America, ' +
          'Europe, Asia, …) besides a whole place. A value that cannot match (a GPU model not known here, a number outside ' +
          "its field's range such as reliability > 1) is a 400 naming the field." +
          anonymousNote,
        tags: ['offers'],
        response: { 200: OffersReply, ...errors },
      },
    },
    async (request, reply) => sendJsonText(reply, await offers.searchText(request.body, callerOf(request))),
  );

  // `vastai search offers --new`: the same filter object under `q` (docs/spec/client-compat-more.md §a "Offer search, new style").
  app.put(
    '/api/v0/search/asks/',
    {
      config,
      schema: {
        summary: 'Search offers (new style): `{select_cols: ["*"], q: <the bundles filter object>}`',
        description: `The same search as \`POST /api/v0/bundles/\`.${anonymousNote}`,
        tags: ['offers'],
        body: SearchAsksBody,
        response: { 200: OffersReply, ...errors },
      },
    },
    async (request, reply) => sendJsonText(reply, await offers.searchAsksText(request.body, callerOf(request))),
  );

  // Older vastai releases send the same query as `GET /api/v0/bundles?q=<json>`.
  app.get(
    '/api/v0/bundles/',
    {
      config,
      schema: {
        summary: 'Search offers (older clients: the filter object as the JSON query parameter `q`)',
        description: `The same search as \`POST /api/v0/bundles/\`.${anonymousNote}`,
        tags: ['offers'],
        querystring: BundlesQuery,
        response: { 200: OffersReply, ...errors },
      },
    },
    async (request, reply) => sendJsonText(reply, await offers.searchJsonText((request.query as { q?: string }).q, callerOf(request))),
  );
}
