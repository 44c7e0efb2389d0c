#!/usr/bin/env bash
# scripts/gpu-check.sh (issue 33 item 6): a check of gpuplane on a real NVIDIA GPU, end to end, in under 10 minutes.
#
# On a machine with an NVIDIA GPU, its driver, Docker and the NVIDIA Container Toolkit, it:
#   1. runs the agent's own discovery (src/agent/hardware.ts discoverGpus: nvidia-smi) and prints what it found;
#   2. starts a local server (`gpuplane serve`, emulator mode, SQLite in a temporary directory, no simulated machines);
#   3. starts `gpuplane agent` against it (a host user's key), which registers the machine, and lists it;
#   4. rents one GPU as another user (runtype ssh_proxy: the agent's entrypoint keeps the container alive);
#   5. checks that the container sees exactly its GPU: `nvidia-smi -L` inside lists one GPU, the one whose index the
#      desired state gave it (by UUID);
#   6. waits for the agent's GPU samples (--gpu-telemetry-interval 2) to reach the instance (gpu_util, gpu_temp,
#      vmem_usage) and `show machine` (every GPU), and prints them;
#   7. cleans up: destroys the instance, stops the agent and the server, removes the agent's containers.
# Every step has its own time limit; on a machine without a GPU (no nvidia-smi, or it fails) it stops at step 1 with a
# clear line and exit status 2, never hanging. Exit 0: all checks passed; 1: a check failed; 2: not a GPU machine.
#
# Needs: node 20+, the repository's node_modules (npm ci), curl, docker, and an image with glibc to run nvidia-smi in
# (the toolkit mounts the driver's nvidia-smi, not a libc): GPU_CHECK_IMAGE, else the first local ubuntu/debian/
# nvidia/cuda image, else `docker pull ubuntu:22.04`.
# Settings: GPU_CHECK_PORT (server port, default 18080), GPU_CHECK_PORT_RANGE (agent's host ports, 47000-47099),
# GPU_CHECK_IMAGE, GPU_CHECK_KEEP=1 (keep the temporary directory and logs). GPU_CHECK_REHEARSAL=1 rehearses it on a
# machine without a GPU, with a stand-in nvidia-smi on PATH: it skips the toolkit check, and after the rent it checks
# the agent's samples in `show machine` and stops (a container cannot get a GPU there), saying so.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1
START=$(date +%s)
PORT="${GPU_CHECK_PORT:-18080}"
PORT_RANGE="${GPU_CHECK_PORT_RANGE:-47000-47099}"
URL="http://127.0.0.1:${PORT}"
OWNER_KEY="gpk_gpu_check_owner_$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")"
SERVER_PID=""
AGENT_PID=""
INSTANCE_ID=""
RENTER_KEY=""
MACHINE_ID=""

say() { printf '[gpu-check %3ss] %s\n' "$(( $(date +%s) - START ))" "$*"; }
fail() { say "FAIL: $*"; exit 1; }
not_gpu() { say "NOT A GPU MACHINE: $*"; exit 2; }

# The owner label of this check's agent's containers (src/agent/owner.ts: a digest of its registration id).
owner_label() {
  node -e 'const c=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8"));process.stdout.write(require("crypto").createHash("sha256").update("gpuplane-agent-owner:"+c.registration_id).digest("hex").slice(0,16))' "$WORK/agent/agent.json" 2>/dev/null
}

cleanup() {
  local rc=$?
  if [ -n "$INSTANCE_ID" ] && [ -n "$RENTER_KEY" ]; then
    curl -s -m 10 -X DELETE -H "Authorization: Bearer $RENTER_KEY" "$URL/api/v0/instances/$INSTANCE_ID/" >/dev/null 2>&1 || true
    # The agent removes the container once it sees the destroy; give it a moment.
    for _ in $(seq 1 20); do
      [ -z "$(docker ps -aq --filter "label=gpuplane.instance_id=$INSTANCE_ID" --filter "label=gpuplane.machine_id=$MACHINE_ID" 2>/dev/null)" ] && break
      sleep 1
    done
  fi
  if [ -n "$AGENT_PID" ] && kill -0 "$AGENT_PID" 2>/dev/null; then
    kill -TERM "$AGENT_PID" 2>/dev/null
    timeout 20 tail --pid="$AGENT_PID" -f /dev/null 2>/dev/null || kill -KILL "$AGENT_PID" 2>/dev/null
  fi
  # Containers this check's agent left (a failed run), by its owner label (src/agent/owner.ts: a digest of the
  # registration id): never another agent's on the same daemon, whatever its machine ids.
  if [ -f "$WORK/agent/agent.json" ]; then
    owner="$(owner_label)"
    ids="$([ -n "$owner" ] && docker ps -aq --filter "label=gpuplane.owner=$owner" 2>/dev/null)"
    [ -n "$ids" ] && docker rm -f $ids >/dev/null 2>&1
  fi
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID" 2>/dev/null
    timeout 15 tail --pid="$SERVER_PID" -f /dev/null 2>/dev/null || kill -KILL "$SERVER_PID" 2>/dev/null
  fi
  if [ "${GPU_CHECK_KEEP:-0}" = "1" ] || [ "$rc" -eq 1 ]; then say "logs kept in $WORK (server.log, agent.log)"; else rm -rf "$WORK"; fi
  say "done in $(( $(date +%s) - START )) s, exit $rc"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# api METHOD PATH KEY [BODY]: the reply's body on stdout; fails the check on an HTTP error.
api() {
  local method=$1 path=$2 key=$3 body=${4:-}
  local args=(-s -m 30 -X "$method" -H "Authorization: Bearer $key" -w '\n%{http_code}')
  [ -n "$body" ] && args+=(-H 'Content-Type: application/json' --data "$body")
  local out code
  out="$(curl "${args[@]}" "$URL$path")" || fail "$method $path: no answer from the server"
  code="${out##*$'\n'}"
  out="${out%$'\n'*}"
  [ "$code" -ge 200 ] && [ "$code" -lt 300 ] || fail "$method $path: HTTP $code: $out"
  printf '%s' "$out"
}
# json EXPR < JSON: a field of the JSON on stdin (node, no jq needed).
json() { node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const v=(new Function("j","return ("+process.argv[1]+")"))(JSON.parse(s));process.stdout.write(typeof v==="string"?v:JSON.stringify(v))})' "$1"; }

# --- 0. what is needed --------------------------------------------------------------------------------------------
command -v node >/dev/null || fail "node is not installed"
command -v curl >/dev/null || fail "curl is not installed"
[ -d node_modules/tsx ] || fail "node_modules is missing: run npm ci first"

# --- 1. the agent's discovery -------------------------------------------------------------------------------------
command -v nvidia-smi >/dev/null || not_gpu "nvidia-smi is not on PATH (no NVIDIA driver)"
if ! smi_list="$(timeout 60 nvidia-smi -L 2>&1)"; then not_gpu "nvidia-smi -L failed: $(printf '%s' "$smi_list" | head -1)"; fi
say "nvidia-smi -L on the host:"; printf '%s\n' "$smi_list" | sed 's/^/    /'
discovery="$(timeout 90 node --import tsx -e '
  const { discoverGpus } = await import("./src/agent/hardware.ts");
  const g = await discoverGpus();
  console.log(JSON.stringify(g));
' 2>&1)" || not_gpu "the agent's discovery failed: $(printf '%s' "$discovery" | tail -1)"
say "agent discovery: $(printf '%s' "$discovery" | json '`${j.gpus.length} GPU(s), ${j.gpus[0].name}, driver ${j.driver_version}, CUDA ${j.cuda_max_good}`')"
printf '%s' "$discovery" | json 'j.gpus.map(g=>`    GPU ${g.index}: ${g.name} ${g.uuid} ${g.gpu_ram} MiB, PCIe gen ${g.pci_gen} x${g.pcie_width}, ${g.gpu_max_power} W, cc ${g.compute_cap}`).join("\n")'; echo

# --- Docker and the toolkit ---------------------------------------------------------------------------------------
timeout 30 docker info >/dev/null 2>&1 || fail "docker is not running (docker info failed)"
IMAGE="${GPU_CHECK_IMAGE:-}"
if [ -z "$IMAGE" ]; then
  IMAGE="$(docker image ls --format '{{.Repository}}:{{.Tag}}' 2>/dev/null | grep -E '^(ubuntu|debian|nvidia/cuda|nvcr.io/nvidia/cuda)[:]' | grep -v '<none>' | head -1)"
fi
if [ -z "$IMAGE" ]; then
  say "no local ubuntu/debian/cuda image: pulling ubuntu:22.04 (2 minutes at most)"
  timeout 120 docker pull -q ubuntu:22.04 >/dev/null 2>&1 || fail "no image to run nvidia-smi in: set GPU_CHECK_IMAGE to a local image with glibc"
  IMAGE=ubuntu:22.04
fi
say "container image: $IMAGE"
REHEARSAL="${GPU_CHECK_REHEARSAL:-0}"
if [ "$REHEARSAL" != "1" ]; then
  toolkit="$(timeout 120 docker run --rm --gpus all "$IMAGE" nvidia-smi -L 2>&1)" \
    || fail "docker run --gpus all $IMAGE nvidia-smi -L failed (NVIDIA Container Toolkit?): $(printf '%s' "$toolkit" | tail -1)"
fi

# --- 2. a local server --------------------------------------------------------------------------------------------
[ -f dist/gpuplane.mjs ] || { say "building (npm run build)"; timeout 240 npm run build >"$WORK/build.log" 2>&1 || fail "npm run build failed: see $WORK/build.log"; }
GPUPLANE_DATABASE_URL="sqlite:$WORK/gpuplane.db" GPUPLANE_BOOTSTRAP_API_KEY="$OWNER_KEY" GPUPLANE_SECRET_KEY="gpu-check-secret-$(date +%s%N)" \
  GPUPLANE_SIM_MACHINES=0 GPUPLANE_GATEWAY=false GPUPLANE_AGENT_OFFLINE_AFTER=30 GPUPLANE_LOG_LEVEL=info \
  node bin/gpuplane.mjs serve --port "$PORT" >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 60); do
  curl -s -m 2 "$URL/api/v0/gpu_names/unique/" >/dev/null 2>&1 && break
  kill -0 "$SERVER_PID" 2>/dev/null || fail "the server exited: $(tail -3 "$WORK/server.log")"
  sleep 1
done
curl -s -m 2 "$URL/api/v0/gpu_names/unique/" >/dev/null 2>&1 || fail "the server did not answer on $URL within 60 s"
say "server on $URL (pid $SERVER_PID)"
HOST_KEY="$(api POST /_emu/users "$OWNER_KEY" '{"email":"gpu-check-host@example.com"}' | json 'j.api_key')"
RENTER_KEY="$(api POST /_emu/users "$OWNER_KEY" '{"email":"gpu-check-renter@example.com"}' | json 'j.api_key')"

# --- 3. the agent -------------------------------------------------------------------------------------------------
allow=()
docker info --format '{{.Driver}} {{.DriverStatus}}' 2>/dev/null | grep -qi 'pquota\|btrfs\|zfs' || allow=(--allow-unlimited-disk)
# The host firewall rule (docs/HOST-SECURITY.md) needs root; as another user the agent runs without it.
[ "$(id -u)" -eq 0 ] || allow+=(--no-host-firewall)
node bin/gpuplane.mjs agent --url "$URL" --api-key "$HOST_KEY" --state-dir "$WORK/agent" --public-ip 127.0.0.1 \
  --port-range "$PORT_RANGE" --gpu-telemetry-interval 2 --heartbeat-interval 2 "${allow[@]}" >"$WORK/agent.log" 2>&1 &
AGENT_PID=$!
for _ in $(seq 1 90); do
  MACHINE_ID="$(api GET '/api/v0/machines?owner=me' "$HOST_KEY" | json '(j.machines[0]||{}).id||""')"
  [ -n "$MACHINE_ID" ] && break
  kill -0 "$AGENT_PID" 2>/dev/null || fail "the agent exited: $(tail -3 "$WORK/agent.log")"
  sleep 1
done
[ -n "$MACHINE_ID" ] || fail "the agent did not register within 90 s: $(tail -3 "$WORK/agent.log")"
api PUT /api/v0/machines/create_asks/ "$HOST_KEY" "{\"machine\":$MACHINE_ID,\"price_gpu\":0.5,\"end_date\":null}" >/dev/null
say "machine $MACHINE_ID registered and listed"

# --- 4. rent one GPU ----------------------------------------------------------------------------------------------
OFFER=$(( MACHINE_ID * 100 + 1 ))
INSTANCE_ID="$(api PUT "/api/v0/asks/$OFFER/" "$RENTER_KEY" "{\"image\":\"$IMAGE\",\"runtype\":\"ssh_proxy\",\"disk\":8}" | json 'j.new_contract')"
say "rented offer $OFFER: instance $INSTANCE_ID; waiting for it to run (5 minutes at most)"
if [ "$REHEARSAL" = "1" ]; then
  for _ in $(seq 1 30); do
    machine="$(api GET "/api/v0/machines/$MACHINE_ID" "$HOST_KEY")"
    [ "$(printf '%s' "$machine" | json 'j[0].gpus.length')" -ge 1 ] && break
    sleep 2
  done
  say "show machine $MACHINE_ID: gpu_fault $(printf '%s' "$machine" | json 'JSON.stringify(j[0].gpu_fault)'), reliability2 $(printf '%s' "$machine" | json 'j[0].reliability2')"
  printf '%s' "$machine" | json 'j[0].gpus.map(g=>`    GPU ${g.index}: util ${g.util} %, mem ${g.mem_used}/${g.mem_total} MiB, ${g.temp} C, ${g.power} W, fault ${JSON.stringify(g.fault)}`).join("\n")'; echo
  [ "$(printf '%s' "$machine" | json 'j[0].gpus.length')" -ge 1 ] || fail "show machine lists no GPU sample"
  say "instance $INSTANCE_ID: $(api GET "/api/v0/instances/$INSTANCE_ID/" "$RENTER_KEY" | json '`${j.instances.actual_status} ${JSON.stringify(j.instances.status_msg)}`')"
  say "REHEARSAL PASSED (no GPU here: the container's GPUs and the instance's samples were NOT checked)"
  exit 0
fi
status=""
for _ in $(seq 1 150); do
  inst="$(api GET "/api/v0/instances/$INSTANCE_ID/" "$RENTER_KEY")"
  status="$(printf '%s' "$inst" | json 'j.instances.actual_status||""')"
  [ "$status" = "running" ] && break
  sleep 2
done
[ "$status" = "running" ] || fail "instance $INSTANCE_ID is '$status' after 5 minutes: $(printf '%s' "$inst" | json 'j.instances.status_msg')"
say "instance $INSTANCE_ID is running"

# --- 5. exactly its GPUs ------------------------------------------------------------------------------------------
container="$(docker ps -q --filter "label=gpuplane.instance_id=$INSTANCE_ID" --filter "label=gpuplane.owner=$(owner_label)" | head -1)"
[ -n "$container" ] || fail "no running container labelled gpuplane.instance_id=$INSTANCE_ID"
inside="$(timeout 60 docker exec "$container" nvidia-smi -L 2>&1)" || fail "nvidia-smi -L in the container failed: $inside"
say "nvidia-smi -L in the container:"; printf '%s\n' "$inside" | sed 's/^/    /'
seen=$(printf '%s\n' "$inside" | grep -c '^GPU ')
[ "$seen" -eq 1 ] || fail "the container sees $seen GPUs, rented 1"
index="$(docker inspect --format '{{range .HostConfig.DeviceRequests}}{{join .DeviceIDs ","}}{{end}}' "$container")"
want_uuid="$(printf '%s' "$discovery" | json "(j.gpus.find(g=>String(g.index)==='${index%%,*}')||{}).uuid||''")"
if [ -n "$want_uuid" ]; then
  printf '%s' "$inside" | grep -q "$want_uuid" || fail "the container's GPU is not the one handed to it (device $index, $want_uuid)"
  say "the container sees exactly GPU $index ($want_uuid)"
else
  say "the container sees one GPU (device request '$index'; its UUID not known to discovery)"
fi

# --- 6. telemetry -------------------------------------------------------------------------------------------------
temp="null"
for _ in $(seq 1 30); do
  inst="$(api GET "/api/v0/instances/$INSTANCE_ID/" "$RENTER_KEY")"
  temp="$(printf '%s' "$inst" | json 'j.instances.gpu_temp')"
  [ "$temp" != "null" ] && break
  sleep 2
done
[ "$temp" != "null" ] || fail "no GPU sample reached the instance within 60 s (gpu_temp null): $(grep -i 'gpu\|xid\|dmesg' "$WORK/agent.log" | tail -3)"
say "instance: $(printf '%s' "$inst" | json '`gpu_util ${j.instances.gpu_util} %, gpu_temp ${j.instances.gpu_temp} C, vmem_usage ${j.instances.vmem_usage} GB, gpu_mem_bw ${j.instances.gpu_mem_bw} GB/s, reliability2 ${j.instances.reliability2}, status_msg ${JSON.stringify(j.instances.status_msg)}`')"
machine="$(api GET "/api/v0/machines/$MACHINE_ID" "$HOST_KEY")"
say "show machine $MACHINE_ID: gpu_fault $(printf '%s' "$machine" | json 'JSON.stringify(j[0].gpu_fault)'), reliability2 $(printf '%s' "$machine" | json 'j[0].reliability2')"
printf '%s' "$machine" | json 'j[0].gpus.map(g=>`    GPU ${g.index}: util ${g.util} %, mem ${g.mem_used}/${g.mem_total} MiB (bw ${g.mem_util} %), ${g.temp} C, ${g.power} W, ECC uncorrected ${g.ecc_uncorrected}, Xid ${g.xid}, fault ${JSON.stringify(g.fault)}`).join("\n")'; echo
[ "$(printf '%s' "$machine" | json 'j[0].gpus.length')" -ge 1 ] || fail "show machine lists no GPU sample"
grep -q "cannot read the kernel log" "$WORK/agent.log" && say "note: the agent could not read the kernel log (not root?): Xid errors are not watched"
say "ALL CHECKS PASSED"
exit 0
