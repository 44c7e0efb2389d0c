import type { TypedApp } from '../platform/http.js';
import { principalOf } from '../platform/auth.js';
import { badRequest } from '../platform/errors.js';
import { ErrorReply } from '../platform/schemas.js';
import type { VolumesService } from './volumes-service.js';
import {
  CreateVolumeBody,
  CreateVolumeReply,
  DeleteVolumeQuery,
  DeleteVolumeReply,
  ListVolumeOfferBody,
  ListVolumeOfferReply,
  UnlistVolumeBody,
  UnlistVolumeReply,
  ListVolumesQuery,
  VolumeSearchReply,
  VolumesReply,
} from './volumes-schemas.js';

const errors = { 400: ErrorReply, 401: ErrorReply, 403: ErrorReply };
const tags = ['volumes'];

export async function volumesRoutes(app: TypedApp, { volumes }: { volumes: VolumesService }): Promise<void> {
  app.post(
    '/api/v0/volumes/search/',
    {
      config: { category: 'misc' },
      schema: {
        summary: 'Search volume offers',
        description:
          'The offers\' filter body: `{<field>: {<op>: value}}` with op eq, neq, lt, lte, gt, gte, in, notin; plus `order`, ' +
          '`limit` and `allocated_storage` (GB priced into `storage_total_cost`). Each machine offers its free disk space.',
        tags,
        response: { 200: VolumeSearchReply, ...errors },
      },
    },
    async (request) => volumes.search(request.body),
  );

  app.put(
    '/api/v0/volumes/',
    {
      config: { category: 'instance_write' },
      schema: {
        summary: 'Create a volume from a volume offer',
        tags,
        body: CreateVolumeBody,
        response: {
          200: CreateVolumeReply,
          402: ErrorReply,
          404: ErrorReply,
          410: ErrorReply,
          ...errors,
        },
      },
    },
    async (request) => volumes.create(principalOf(request), request.body),
  );

  app.get(
    '/api/v0/volumes/',
    {
      config: { category: 'instance_read' },
      schema: {
        summary: 'List your volumes',
        tags,
        querystring: ListVolumesQuery,
        response: { 200: VolumesReply, ...errors },
      },
    },
    async (request) => volumes.list(principalOf(request)),
  );

  app.post(
    '/api/v0/volumes/',
    {
      // The host side (a machine's listing), as `list machine`.
      config: { category: 'machine_write' },
      schema: {
        summary: 'Offer disk of your machines as volumes (`list volume`): size GB in all at price_disk $/GB/month',
        tags,
        body: ListVolumeOfferBody,
        response: { 200: ListVolumeOfferReply, 404: ErrorReply, ...errors },
      },
    },
    async (request) => volumes.listOffer(principalOf(request), request.body),
  );

  app.post(
    '/api/v0/volumes/unlist',
    {
      // The host side (a machine's listing), as `unlist machine`.
      config: { category: 'machine_write' },
      schema: {
        summary: 'Unlist a volume offer of your machine: no new volumes there; existing volumes stay',
        tags,
        body: UnlistVolumeBody,
        response: { 200: UnlistVolumeReply, 404: ErrorReply, ...errors },
      },
    },
    async (request) => volumes.unlist(principalOf(request), request.body.id),
  );

  app.delete(
    '/api/v0/volumes/',
    {
      config: { category: 'instance_write' },
      schema: {
        summary: 'Delete a volume (`?id=N`); it must not be mounted by a live instance',
        tags,
        querystring: DeleteVolumeQuery,
        response: { 200: DeleteVolumeReply, 404: ErrorReply, 409: ErrorReply, ...errors },
      },
    },
    async (request) => {
      // `?id=N` as the vastai client sends it; a JSON body `{id}` is accepted too.
      const body = request.body as { id?: unknown } | undefined;
      const id = request.query.id ?? (Number.isInteger(body?.id) && (body!.id as number) > 0 ? (body!.id as number) : undefined);
      if (id === undefined) throw badRequest('querystring.id is required: the id of the volume to delete');
      return volumes.remove(principalOf(request), id);
    },
  );
}
