/**
 * Issue 34 item 5 (recorder): the recording file, one JSON object a line. A server start appends a header line
 * (`format`), then one line per API call it answered, in the order the replies were sent. Shared by the recorder
 * (the server) and `gpuplane emu replay` (the CLI), so it imports nothing from either.
 */

export const RECORDING_FORMAT = 'gpuplane-emulator-recording';
export const RECORDING_VERSION = 1;

/** The first line a server start appends: how the recorded emulator ran, so a replay can run the same. */
export interface RecordingHeader {
  format: typeof RECORDING_FORMAT;
  version: number;
  /** Service clock (Unix seconds) at start. */
  started_at: number;
  /** `virtual` answers repeat exactly on a replay started the same; `real` makes times differ. */
  clock: 'real' | 'virtual';
  /** GPUPLANE_SEED and GPUPLANE_SIM_MACHINES of the recorded emulator: a replay's emulator should have the same. */
  seed: number;
  sim_machines: number;
}

/** One API call. */
export interface RecordedCall {
  seq: number;
  /** Service clock (Unix seconds) when the reply was sent. */
  at: number;
  method: string;
  /** Path with query, secrets replaced. */
  path: string;
  /** The emulator control API (`/_emu/…`): recorded, and replayed, like any other call. */
  control: boolean;
  status: number;
  request: {
    headers: Record<string, string>;
    /** The JSON body as parsed, secrets replaced; null without one. */
    body: unknown;
  };
  /**
   * The reply: JSON (secrets replaced), a text, or null (empty, a stream or binary reply, or `omitted`: the
   * emulator's whole state, whose body and reply are never recorded).
   */
  reply: unknown;
  reply_kind: 'json' | 'text' | 'empty' | 'stream' | 'binary' | 'omitted';
  reply_headers: Record<string, string>;
  /** Milliseconds the server took. */
  ms: number;
}

export type RecordingLine = RecordingHeader | RecordedCall;

export function isHeader(line: RecordingLine): line is RecordingHeader {
  return (line as RecordingHeader).format === RECORDING_FORMAT;
}
