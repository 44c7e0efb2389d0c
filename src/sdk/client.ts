/**
 * The gpuplane SDK: a typed client for the API over plain fetch (Node 20+ and browsers). Request and reply types come
 * from the server's own TypeBox schemas only (`Static<>` through `import type`), never from a service's return type:
 * what the SDK promises is what the server documents and validates, and no server code reaches a bundle.
 *
 * @example
 *   const gp = createClient({ url: 'http://127.0.0.1:8080', apiKey: process.env.GPUPLANE_API_KEY });
 *   const me = await gp.account.currentUser();
 */
import { accountApi } from './api/account.js';
import { agentApi } from './api/agent.js';
import { envVarsApi } from './api/env-vars.js';
import { paymentsApi } from './api/payments.js';
import { auditApi } from './api/audit.js';
import { cloudApi } from './api/cloud.js';
import { emulatorApi } from './api/emulator.js';
import { billingApi } from './api/billing.js';
import { apiKeysApi, teamApi } from './api/keys.js';
import { offersApi } from './api/offers.js';
import { instancesApi } from './api/instances.js';
import { instanceExtrasApi } from './api/instance-extras.js';
import { serverlessApi, volumesApi } from './api/serverless.js';
import { deploymentsApi } from './api/serverless-deployments.js';
import { sshKeysApi, templatesApi } from './api/templates.js';
import { loginApi, tfaApi } from './api/tfa.js';
import { machinesApi } from './api/machines.js';
import { scheduledJobsApi } from './api/scheduled-jobs.js';
import { subaccountsApi } from './api/subaccounts.js';
import { depositsApi } from './api/deposits.js';
import { contractsApi, launchApi } from './api/launch.js';
import { benchmarksApi } from './api/benchmarks.js';
import { clustersApi } from './api/clusters.js';
import { networkApi } from './api/network.js';
import { createTransport, type ClientOptions } from './transport.js';
import { waitForInstance, type InstanceState, type WaitOptions } from './wait.js';
import { GpuplaneError } from './errors.js';

export function createClient(options: ClientOptions) {
  const t = createTransport(options);
  const showForWait = async (id: number, signal: AbortSignal): Promise<InstanceState | null> => {
    try {
      const r = await t.request<{ instances: InstanceState | null }>('GET', `/api/v0/instances/${id}/`, { signal });
      return r.instances;
    } catch (err) {
      if (err instanceof GpuplaneError && err.status === 404) return null;
      throw err;
    }
  };
  return {
    /** The transport, for routes this SDK does not wrap yet: `request(method, path, {query, body})`. */
    transport: t,
    account: accountApi(t),
    emulator: emulatorApi(t),
    offers: offersApi(t),
    /** Instances, with reboot, recycle, update, execute and snapshots (api/instance-extras.ts). */
    instances: { ...instancesApi(t), ...instanceExtrasApi(t) },
    volumes: volumesApi(t),
    serverless: serverlessApi(t),
    /** Serverless deployments and their versions. */
    deployments: deploymentsApi(t),
    templates: templatesApi(t),
    sshKeys: sshKeysApi(t),
    envVars: envVarsApi(t),
    apiKeys: apiKeysApi(t),
    team: teamApi(t),
    billing: billingApi(t),
    /** Credit transfers and invoices. */
    payments: paymentsApi(t),
    /** The audit log and the addresses your requests came from. */
    audit: auditApi(t),
    /** Cloud storage connections. */
    cloud: cloudApi(t),
    auth: loginApi(t),
    tfa: tfaApi(t),
    /** The machine agent's protocol (docs/AGENT-PROTOCOL.md). */
    agent: agentApi(t),
    /** The host side: your machines, their listings, maintenance windows and earnings. */
    machines: machinesApi(t),
    /** API requests the server replays as you, hourly, daily or weekly. */
    scheduledJobs: scheduledJobsApi(t),
    /** Accounts made under yours: list (with balances), create; fund them with `payments.transferCredit`. */
    subaccounts: subaccountsApi(t),
    /** Prepaid instances: a deposit their charges draw from first, at a discount. */
    deposits: depositsApi(t),
    /** Search and rent in one call. */
    launch: launchApi(t),
    /** Your contracts by label and id, and the filter values of your instances. */
    contracts: contractsApi(t),
    /** Benchmark results gpuplane has recorded. */
    benchmarks: benchmarksApi(t),
    /** Clusters of your machines (records only). */
    clusters: clustersApi(t),
    /** Overlay networks, network disks and volumes (none on this server: changes answer 503). */
    network: networkApi(t),
    /**
     * Waits until instance `id` is in `until` (default `running`), on the server's instance events. Rejects with
     * InstanceFailedError on `exited`/`unknown`/`offline` and with WaitTimeoutError after `timeout` seconds.
     */
    waitForInstance: (id: number, opts?: WaitOptions) => waitForInstance(t, showForWait, id, opts),
  };
}

export type GpuplaneClient = ReturnType<typeof createClient>;
