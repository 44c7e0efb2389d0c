/** `show machine`'s GPU fields (issue 33, telemetry): hosting-gpu-view.ts fills them. */
import { Type } from 'typebox';

const Num = Type.Union([Type.Number(), Type.Null()]);

/** The fields `show machine` gains (hosting-schemas.ts MachineRow). */
export const MachineGpuFields = {
  gpus: Type.Array(Type.Object({
    index: Type.Integer(), util: Num, mem_util: Num, mem_used: Num, mem_total: Num, temp: Num, power: Num,
    ecc_uncorrected: Num, xid: Num, fault: Type.Union([Type.String(), Type.Null()]),
  }, { additionalProperties: true }), { description: 'each GPU as the agent last sampled it (units as nvidia-smi: %, MiB, °C, W); [] before a sample' }),
  gpu_sampled_at: Type.Union([Type.Number(), Type.Null()], { description: 'when the latest sample arrived, Unix seconds' }),
  gpu_fault: Type.Union([Type.String(), Type.Null()], { description: 'why the machine is not offered for its GPUs (a GPU lost, NVML failing, a critical Xid), or null' }),
  health_events: Type.Array(Type.Object({
    kind: Type.String({ description: 'gpu: a GPU fault; offline: the agent was silent' }),
    reason: Type.String(), started_at: Type.Number(), ended_at: Type.Union([Type.Number(), Type.Null()]),
  }), { description: 'the latest down periods, newest first (reliability2 is measured from them)' }),
};

