/**
 * What the client's own serverless worker (vast-cli's `vastai/serverless/server`, "pyworker") posts to the autoscaler
 * at its `REPORT_ADDR` (issue 33 item 5): `POST /worker_status/` (lib/metrics.py `__send_metrics_and_reset`, the
 * fields of lib/data_types.py `WorkerStatusData`) about once a second while it has news, every 10 s otherwise; and
 * `POST /delete_requests/` (lib/metrics.py `__send_delete_requests_and_reset`), the requests it finished. Both carry
 * the worker's instance id and its MASTER_TOKEN in the body; the worker only looks at the reply's status.
 *
 * Open to keys not listed (`additionalProperties`): a newer worker adds fields to its report, and a report refused
 * for one would leave the worker unroutable. The fields read are typed and bounded.
 */
import { Type } from 'typebox';

/** The longest error message kept from a report (the worker's own are a line; a traceback is cut). */
export const WORKER_ERROR_MAX = 2000;

const Id = Type.Integer({ minimum: 1, maximum: 2_147_483_647, description: 'the worker\'s CONTAINER_ID: its instance id' });
const Mtoken = Type.String({ maxLength: 256, description: 'the MASTER_TOKEN its environment was given' });
const Figure = Type.Optional(Type.Number({ minimum: 0, maximum: 1e15 }));

export const WorkerStatusBody = Type.Object(
  {
    id: Id,
    mtoken: Mtoken,
    version: Type.Optional(Type.String({ maxLength: 64 })),
    loadtime: Figure,
    cur_load: Figure,
    new_load: Figure,
    rej_load: Figure,
    max_perf: Figure,
    cur_perf: Figure,
    error_msg: Type.Optional(Type.Union([Type.String({ maxLength: 65_536 }), Type.Null()])),
    num_requests_working: Type.Optional(Type.Integer({ minimum: 0 })),
    num_requests_recieved: Type.Optional(Type.Integer({ minimum: 0 })),
    url: Type.Optional(Type.String({ maxLength: 512 })),
  },
  { additionalProperties: true },
);

export const DeleteRequestsBody = Type.Object(
  {
    worker_id: Id,
    mtoken: Mtoken,
    requests: Type.Array(Type.Object({ request_idx: Type.Integer() }, { additionalProperties: true }), { maxItems: 100_000 }),
  },
  { additionalProperties: true },
);

export const WorkerReportReply = Type.Object({
  success: Type.Boolean(),
  /** Whether the server takes the worker as ready for requests after this report. */
  ready: Type.Optional(Type.Boolean()),
  /** Finished requests acknowledged (`/delete_requests/`). */
  deleted: Type.Optional(Type.Integer()),
});
