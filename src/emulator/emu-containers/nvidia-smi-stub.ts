/**
 * The stand-in `nvidia-smi` a real container of a simulated machine gets (issue 34 item 1): there is no GPU here, but
 * scripts that check for GPUs (`nvidia-smi -L`, `--query-gpu=name,memory.total --format=csv`, a plain `nvidia-smi`)
 * should pass and see the machine the renter chose. A /bin/sh script (busybox's sh runs it), the machine's figures
 * written into it; it lists the GPUs CUDA_VISIBLE_DEVICES names (as the container's own indexes, 0 to n-1), so a
 * script narrowing it sees fewer. Utilization, temperature and power read as an idle GPU's.
 */

export interface StubGpus {
  /** The model as the marketplace names it (`RTX 4090`). */
  gpuName: string;
  /** GPUs the instance holds. */
  count: number;
  /** Each GPU's memory, MiB. */
  memoryMib: number;
  driverVersion: string;
  /** CUDA version the driver supports (the offer's cuda_max_good). */
  cudaVersion: number;
  /** The offer's compute_cap (890 for 8.9), or 0 when unknown. */
  computeCap: number;
  /** Stable per machine: the GPUs' UUIDs are derived from it. */
  machineId: number;
}

/** Where the script is written in the container (on the PATH of every common image). */
export const NVIDIA_SMI_PATH = '/usr/local/bin/nvidia-smi';

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** nvidia-smi's product name: the marketplace's model with the vendor's prefix. */
export function productName(gpuName: string): string {
  return /^(nvidia|tesla|quadro)\b/i.test(gpuName) ? gpuName : `NVIDIA ${gpuName}`;
}

function uuid(machineId: number, index: number): string {
  const hex = (machineId * 1000 + index).toString(16).padStart(12, '0').slice(-12);
  return `GPU-e0e0e0e0-0000-4000-8000-${hex}`;
}

/** The script's text. */
export function nvidiaSmiScript(g: StubGpus): string {
  const cc = g.computeCap >= 100 ? (g.computeCap / 100).toFixed(1) : g.computeCap > 0 ? g.computeCap.toFixed(1) : '8.0';
  const cuda = Number.isInteger(g.cudaVersion) ? g.cudaVersion.toFixed(1) : String(g.cudaVersion);
  const uuids = Array.from({ length: g.count }, (_, i) => uuid(g.machineId, i)).join(' ');
  return `#!/bin/sh
# gpuplane emulator: a stand-in nvidia-smi (no GPU here) reporting the simulated machine's GPUs.
NAME=${quote(productName(g.gpuName))}
MEM=${Math.round(g.memoryMib)}
DRIVER=${quote(g.driverVersion)}
CUDA=${quote(cuda)}
CC=${quote(cc)}
N=${g.count}
UUIDS=${quote(uuids)}
all=''; i=0; while [ "$i" -lt "$N" ]; do all="$all,$i"; i=$((i+1)); done
vis="\${CUDA_VISIBLE_DEVICES-\${all#,}}"
gpus=''
for v in $(echo "$vis" | tr ',' ' '); do
  case "$v" in ''|*[!0-9]*) continue ;; esac
  [ "$v" -lt "$N" ] && gpus="$gpus $v"
done
uuid_of() { n="$1"; set -- $UUIDS; shift "$n"; echo "$1"; }
query=''; fmt='csv'; list=0; want=''
for a in "$@"; do
  if [ -n "$want" ]; then eval "$want=\\$a"; want=''; continue; fi
  case "$a" in
    -L|--list-gpus) list=1 ;;
    --query-gpu=*) query="\${a#--query-gpu=}" ;;
    --query-gpu) want=query ;;
    --format=*) fmt="\${a#--format=}" ;;
    --format) want=fmt ;;
    -h|--help) echo "NVIDIA System Management Interface -- stand-in of the gpuplane emulator"; exit 0 ;;
    *) echo "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help." >&2; exit 2 ;;
  esac
done
if [ -z "$gpus" ]; then echo "No devices were found"; exit 6; fi
if [ "$list" = 1 ]; then
  for i in $gpus; do echo "GPU $i: $NAME (UUID: $(uuid_of "$i"))"; done
  exit 0
fi
count=0; for i in $gpus; do count=$((count+1)); done
if [ -n "$query" ]; then
  units=1; header=1
  case ",$fmt," in *,nounits,*) units=0 ;; esac
  case ",$fmt," in *,noheader,*) header=0 ;; esac
  fields=$(echo "$query" | tr ',' ' ')
  for f in $fields; do
    case "$f" in
      index|name|gpu_name|uuid|gpu_uuid|count|driver_version|compute_cap|memory.total|memory.free|memory.used) ;;
      utilization.gpu|utilization.memory|temperature.gpu|power.draw|power.limit|pci.bus_id|persistence_mode) ;;
      pcie.link.gen.max|pcie.link.gen.current|pcie.link.width.max|pcie.link.width.current) ;;
      *) echo "Field \\"$f\\" is not a valid field to query." >&2; exit 2 ;;
    esac
  done
  if [ "$header" = 1 ]; then
    line=''
    for f in $fields; do
      h="$f"
      if [ "$units" = 1 ]; then
        case "$f" in
          memory.*) h="$f [MiB]" ;; utilization.*) h="$f [%]" ;; power.*) h="$f [W]" ;; clocks.*) h="$f [MHz]" ;;
        esac
      fi
      line="$line, $h"
    done
    echo "\${line#, }"
  fi
  for i in $gpus; do
    line=''
    for f in $fields; do
      case "$f" in
        index) v="$i" ;;
        name|gpu_name) v="$NAME" ;;
        uuid|gpu_uuid) v="$(uuid_of "$i")" ;;
        count) v="$count" ;;
        driver_version) v="$DRIVER" ;;
        compute_cap) v="$CC" ;;
        memory.total) v="$MEM" ;;
        memory.free) v="$((MEM - 1))" ;;
        memory.used) v="1" ;;
        utilization.gpu|utilization.memory) v="0" ;;
        temperature.gpu) v="35" ;;
        power.draw) v="20.00" ;;
        power.limit) v="300.00" ;;
        pci.bus_id) v="00000000:0$((i+1)):00.0" ;;
        persistence_mode) v="Enabled" ;;
        pcie.link.gen.*) v="4" ;;
        pcie.link.width.*) v="16" ;;
      esac
      if [ "$units" = 1 ]; then
        case "$f" in
          memory.*) v="$v MiB" ;; utilization.*) v="$v %" ;; power.draw|power.limit) v="$v W" ;;
        esac
      fi
      line="$line, $v"
    done
    echo "\${line#, }"
  done
  exit 0
fi
echo "+-----------------------------------------------------------------------------------------+"
echo "| NVIDIA-SMI $DRIVER    Driver Version: $DRIVER    CUDA Version: $CUDA  (gpuplane emulator) |"
echo "|-----------------------------------------+------------------------+----------------------+"
for i in $gpus; do
  echo "|   $i  $NAME      On  | 00000000:0$((i+1)):00.0 Off |  1MiB / \${MEM}MiB |   0%   Default |"
done
echo "+-----------------------------------------------------------------------------------------+"
echo "| Processes:  No running processes found                                                  |"
echo "+-----------------------------------------------------------------------------------------+"
`;
}
