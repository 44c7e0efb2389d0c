/** The most GPUs one machine may have. */
export const MAX_GPUS_PER_MACHINE = 64;
