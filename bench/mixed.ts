/**
 * The mixed load of issue 16: 40% offer search, 20% rent, 15% destroy, 15% charges, 10% instance list, driven by wrk
 * with a Lua script. Each wrk (one per server process) has its own renter and its own machines: it rents their 1-GPU
 * offers in turn, learns each new instance's id from the rent's reply, and destroys the oldest it holds. Its live
 * instances are capped (a rent past the cap destroys instead), so a long soak keeps a steady working set, and the
 * machines hold more GPUs than the cap, so a rent never finds its offer taken.
 */
import { addMachines, api } from './pg.js';
import { runWrk, type WrkResult } from './wrk.js';

/** Live instances one wrk keeps at most. */
const LIVE_CAP = 200;
/** Machines (8 GPUs each) per wrk: 1.5× the GPUs the cap can hold. */
const MACHINES_PER_SLICE = 38;
const GPUS = 8;

export const SEARCH_BODY = {
  gpu_ram: { gte: 16000 },
  reliability2: { gte: '0.95' },
  verified: { eq: true },
  dph_total: { lte: '2.5' },
  order: [['dlperf_per_dphtotal', 'desc']],
  type: 'on-demand',
  limit: 64,
};
const RENT_BODY = { image: 'pytorch/pytorch:latest', disk: 10, runtype: 'ssh_direc ssh_proxy' };

/** Renters per slice: what one user does (their running totals) is serialized, as it is for real users. */
const USERS_PER_SLICE = 7;

export interface Slice {
  keys: string[];
  offers: number[];
}

/** Prepares `n` slices (a renter with credit and its machines) through the server at `url`. */
export async function prepareSlices(url: string, ownerKey: string, n: number, tag: string): Promise<Slice[]> {
  const slices: Slice[] = [];
  for (let s = 0; s < n; s++) {
    const keys: string[] = [];
    for (let u = 0; u < USERS_PER_SLICE; u++) {
      const { api_key } = await api(url, ownerKey, 'POST', '/_emu/users', { email: `mix-${tag}-${s}-${u}@example.com`, credit: 1e8 });
      keys.push(api_key);
    }
    const { offers } = await addMachines(url, ownerKey, MACHINES_PER_SLICE, GPUS);
    slices.push({ keys, offers });
  }
  return slices;
}

/** The mix's charges request: the last 30 days. */
export function chargesPath(nowS: number): string {
  const day = 86_400;
  return `/api/v0/charges/?select_filters=${encodeURIComponent(JSON.stringify({ day: { gte: Math.floor(nowS / day - 30) * day, lte: Math.ceil(nowS / day + 1) * day } }))}`;
}

const lua = (s: string) => JSON.stringify(s); // a JSON string literal is a valid Lua string literal for ASCII text

/** The wrk script of one slice. */
export function mixedScript(slice: Slice, nowS = Date.now() / 1000): string {
  const charges = chargesPath(nowS);
  return `
local keys = { ${slice.keys.map((k) => lua(`Bearer ${k}`)).join(', ')} }
local offers = { ${slice.offers.join(',')} }
local search = ${lua(JSON.stringify(SEARCH_BODY))}
local rentBody = ${lua(JSON.stringify(RENT_BODY))}
local CAP = ${LIVE_CAP}
local live, head, tail = {}, 1, 0
local nextOffer, i = 1, 0
local json, plain
-- An instance is destroyed with its own instance key (the rent's reply), whoever rented it.
local function destroy()
  if tail < head then return nil end
  local inst = live[head]; live[head] = nil; head = head + 1
  return wrk.format("DELETE", "/api/v0/instances/" .. inst[1] .. "/", { ["Authorization"] = "Bearer " .. inst[2] })
end
local function list() return wrk.format("GET", "/api/v0/instances/", plain) end
function request()
  i = i + 1
  local auth = keys[(i % #keys) + 1] -- 7 renters: every one makes the whole mix
  json = { ["Authorization"] = auth, ["Content-Type"] = "application/json" }
  plain = { ["Authorization"] = auth }
  local slot = i % 20
  if slot < 8 then return wrk.format("POST", "/api/v0/bundles/", json, search) end
  if slot < 12 then
    if tail - head + 1 >= CAP then return destroy() end
    local o = offers[nextOffer]; nextOffer = nextOffer % #offers + 1
    return wrk.format("PUT", "/api/v0/asks/" .. o .. "/", json, rentBody)
  end
  if slot < 15 then return destroy() or list() end
  if slot < 18 then return wrk.format("GET", ${lua(charges)}, plain) end
  return list()
end
function on_response(status, headers, body)
  if status ~= 200 then return end
  local id, key = string.match(string.sub(body, 1, 200), '"new_contract":(%d+),"instance_api_key":"([^"]+)"')
  if id then tail = tail + 1; live[tail] = { id, key } end
end
`;
}

export interface MixedResult extends WrkResult {
  perProcess: number[];
}

/** Runs the mix against every URL at once (slice i on url i), `connections` shared among them; the summed rate. */
export async function runMixed(urls: string[], slices: Slice[], connections: number, durationS: number): Promise<MixedResult> {
  const each = urls.map((url, i) => Math.floor(connections / urls.length) + (i < connections % urls.length ? 1 : 0));
  const results = await Promise.all(urls.map((url, i) => runWrk({ url, connections: each[i], durationS, script: mixedScript(slices[i]), timeoutS: 10 })));
  const requests = results.reduce((n, r) => n + r.requests, 0);
  const weighted = (f: (r: WrkResult) => number) => results.reduce((n, r) => n + f(r) * r.requests, 0) / Math.max(1, requests);
  return {
    requests,
    rps: results.reduce((n, r) => n + r.rps, 0),
    // Percentiles of the whole are not those of the parts; the parts' request-weighted mean is close enough here.
    p50Ms: weighted((r) => r.p50Ms),
    p99Ms: Math.max(...results.map((r) => r.p99Ms)),
    errors: results.reduce((n, r) => n + r.errors, 0),
    non2xx: results.reduce((n, r) => n + r.non2xx, 0),
    durationS: Math.max(...results.map((r) => r.durationS)),
    meanMs: weighted((r) => r.meanMs),
    maxMs: Math.max(...results.map((r) => r.maxMs)),
    timeouts: results.reduce((n, r) => n + r.timeouts, 0),
    perProcess: results.map((r) => Math.round(r.rps)),
  };
}

/** Destroys every instance a slice's renter still holds (a wrk run forgets the ones it did not destroy). */
export async function clearSlice(url: string, slice: Slice): Promise<void> {
  // Rents still in flight when wrk stopped complete afterwards: the renters hold nothing only once two rounds of
  // lists, a while apart, find nothing.
  for (let empty = 0; empty < 2; ) {
    let found = 0;
    for (const key of slice.keys) {
      const { instances } = await api(url, key, 'GET', '/api/v0/instances/');
      for (const inst of instances as Array<{ id: number }>) {
        // A destroy still in flight from wrk may get there first (404).
        const res = await fetch(`${url}/api/v0/instances/${inst.id}/`, { method: 'DELETE', headers: { authorization: `Bearer ${key}` } });
        if (res.status !== 200 && res.status !== 404) throw new Error(`destroy ${inst.id}: ${res.status} ${await res.text()}`);
        await res.arrayBuffer();
      }
      found += instances.length;
    }
    empty = found === 0 ? empty + 1 : 0;
    await new Promise((r) => setTimeout(r, 500));
  }
}
