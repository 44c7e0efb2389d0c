/**
 * Emulator faults as a port (contract §2, `POST /_emu/faults`): a feature that can be made to fail declares its
 * handlers by fault name; the composition root registers them with the emulator in emulator mode only. A feature
 * never imports the emulator.
 */

/** Body of `POST /_emu/faults`. */
export interface FaultRequest {
  fault: string;
  instance_id?: number;
  machine_id?: number;
  count?: number;
}

/** A feature's handler for one fault: what it adds to the reply, if anything. */
export type FaultHandler = (req: FaultRequest) => Promise<Record<string, unknown> | void>;
