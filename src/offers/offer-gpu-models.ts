/**
 * The GPU models a `gpu_name` filter may name (issue 29 item 5): the catalogue's (machines-catalogue.ts, the models
 * gpuplane knows) and whatever the fleet holds now (a real host may report a model the catalogue lacks). Any other
 * name cannot match, and is refused with the models that would: `gpu_name=RTX4090`, a typo of `RTX 4090`, was a
 * silent empty list.
 */
import { CATALOGUE_GPU_NAMES } from '../machines/machines-offers-contract.js';
import type { KnownValues } from './filter.js';
import { normalizeGpuName } from './offer-fields.js';

/** Longer than any GPU model's name. */
const MAX_MODEL_NAME = 100;

/** A name without case, spaces or punctuation: `RTX4090` and `rtx-4090` both find `RTX 4090`. */
const compact = (s: string) => s.toLowerCase().replace(/[^a-z0-9]/g, '');

/**
 * `fleet()`: the fleet's model names, normalized as the gpu_name field compares them (the offer columns' dictionary);
 * `fleetShown()`: the same as hosts wrote them, for the error message (read only when a name is refused).
 */
export function knownGpuModels(fleet: () => readonly (string | null)[], fleetShown: () => Iterable<string>): KnownValues {
  const catalogue = new Set(CATALOGUE_GPU_NAMES.map(normalizeGpuName));
  return {
    has: (name) => catalogue.has(name) || fleet().includes(name),
    expected: (given) => {
      const names = [...new Set([...CATALOGUE_GPU_NAMES, ...fleetShown()])].sort();
      // A model name is short: a longer value is no typo of one, and is not worth compacting.
      const typed = given.length <= MAX_MODEL_NAME ? compact(given) : undefined;
      const like = typed && names.find((n) => compact(n) === typed);
      const hint = like ? `did you mean ${JSON.stringify(like)}? ` : '';
      return `${hint}gpu_name is a GPU model (spaces may be written _), one of: ${names.join(', ')}`;
    },
  };
}
