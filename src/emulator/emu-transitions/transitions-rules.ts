/**
 * The transition rules as the simulated agent applies them (simhost-agent.ts), pure: which rule times an instance's
 * boot, and the keys of the gates that hold a boot back. A gate is kept with the machine's images (sim_images), as a
 * pull is: a boot under a `delay` or `manual` rule waits for its gate as a boot under the seeded timing waits for its
 * image, so the step's set-based load, write-back and due work serve both (no statement of their own).
 */

/** The resource kinds whose transitions a rule times: the simulated host's work for an instance (create/start → running). */
export const TRANSITION_KINDS = ['instance'] as const;
export type TransitionKind = (typeof TRANSITION_KINDS)[number];

export const TRANSITION_MODES = ['immediate', 'delay', 'manual', 'default'] as const;
export type TransitionMode = (typeof TRANSITION_MODES)[number];

/** A rule as stored (transitions-tables.ts): `seconds` for `delay` only. */
export interface TransitionRule {
  mode: TransitionMode;
  seconds: number | null;
}

/** The rules and slow-pull windows that bear on one step's machines (simhost-store.ts `load`). */
export interface LoadedTransitions {
  /** The `instance` kind's rule, if one is set. */
  kind: TransitionRule | undefined;
  /** Instances' own rules. */
  instances: Map<number, TransitionRule>;
  /** Machines under an open slow-pull window: the pull time (the slowest window's). */
  slowPulls: Map<number, number>;
}

export const NO_TRANSITIONS: LoadedTransitions = { kind: undefined, instances: new Map(), slowPulls: new Map() };

/** How one boot of an instance is timed. `default`: the seeded pull (`pullSeconds` null) or a slow-pull window's. */
export type EffectiveRule =
  | { mode: 'default'; pullSeconds: number | null }
  | { mode: 'immediate' }
  | { mode: 'delay'; seconds: number }
  | { mode: 'manual' };

const SEEDED: EffectiveRule = { mode: 'default', pullSeconds: null };

function effective(rule: TransitionRule): EffectiveRule {
  switch (rule.mode) {
    case 'immediate':
    case 'manual':
      return { mode: rule.mode };
    case 'delay':
      return { mode: 'delay', seconds: rule.seconds ?? 0 };
    default:
      return SEEDED;
  }
}

/**
 * The rule of an instance on a machine, the most specific first: the instance's own rule (its `default` is the
 * seeded timing, whatever else is set), a slow-pull window of its machine, the kind's rule, the seeded timing.
 */
export function effectiveRule(t: LoadedTransitions, instanceId: number, machineId: number): EffectiveRule {
  const own = t.instances.get(instanceId);
  if (own) return effective(own);
  const slow = t.slowPulls.get(machineId);
  if (slow !== undefined) return { mode: 'default', pullSeconds: slow };
  return t.kind ? effective(t.kind) : SEEDED;
}

/**
 * When a manual gate opens: never, until advanced (`POST /_emu/instances/{id}/advance` sets it to the time of the
 * advance). A time, not null: null is a hung pull (fault `stall`), which `recover` ends; a manual gate is no fault.
 */
export const MANUAL_GATE_AT = 9e15;

const GATE = /^transition gate: instance (\d+) generation (\d+) boot (\d+)$/;

/** The gate of one boot of an instance: its generation and its `boot` count (a start or reboot is a new boot). */
export function gateKey(d: { instance_id: number; generation: number; boot: number }): string {
  return `transition gate: instance ${d.instance_id} generation ${d.generation} boot ${d.boot}`;
}

/** The instance a gate key holds back, or undefined for an image's key. */
export function gateInstance(key: string): number | undefined {
  const m = GATE.exec(key);
  return m ? Number(m[1]) : undefined;
}

/** The prefix of every gate key of an instance (SQL LIKE, with the space that ends the id). */
export function gatePrefix(instanceId: number): string {
  return `transition gate: instance ${instanceId} `;
}
