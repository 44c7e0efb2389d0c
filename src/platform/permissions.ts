/**
 * Permission categories of scoped API keys (spec: Authentication). Every route declares exactly one, in its route
 * config, and the OpenAPI document lists it per operation (`x-permission-category`).
 */
export const CATEGORIES = [
  'misc',
  'user_read',
  'user_write',
  'instance_read',
  'instance_write',
  'billing_read',
  'billing_write',
  'team_read',
  'team_write',
  // Host side (src/hosting/): a host's machines, listings, maintenance windows and earnings.
  'machine_read',
  'machine_write',
] as const;

export type Category = (typeof CATEGORIES)[number];

/** `{"api": {"<category>": {...}}}`; `null` stands for full access. */
export interface PermissionDoc {
  api: Partial<Record<Category, Record<string, unknown>>>;
}

export const FULL_ACCESS: PermissionDoc = {
  api: Object.fromEntries(CATEGORIES.map((c) => [c, {}])) as PermissionDoc['api'],
};

export function allows(doc: PermissionDoc | null, category: Category): boolean {
  return doc === null || doc.api[category] !== undefined;
}

/**
 * Parses and checks a permission document; returns an error message naming what is wrong, or the document.
 * Per-category constraints (`{"instance_read": {"api.instance.request_logs": {"constraints": …}}}`) are refused:
 * gpuplane does not enforce them, and accepting them would grant the whole category silently (fail closed).
 */
export function parsePermissionDoc(value: unknown): PermissionDoc | string {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'permissions must be an object';
  const keys = Object.keys(value);
  const api = (value as Record<string, unknown>).api;
  if (keys.some((k) => k !== 'api')) return `permissions: unknown top-level key ${JSON.stringify(keys.find((k) => k !== 'api'))}`;
  if (typeof api !== 'object' || api === null || Array.isArray(api)) return 'permissions.api must be an object';
  const clean: PermissionDoc['api'] = {};
  for (const [category, constraint] of Object.entries(api)) {
    if (!(CATEGORIES as readonly string[]).includes(category)) return `permissions.api: unknown category ${JSON.stringify(category)}`;
    if (typeof constraint !== 'object' || constraint === null || Array.isArray(constraint)) {
      return `permissions.api.${category} must be an object`;
    }
    if (Object.keys(constraint).length > 0) {
      return `permissions.api.${category}: constraints are not supported; grant the whole category with {}`;
    }
    clean[category as Category] = {};
  }
  return { api: clean };
}

/** A role's permissions in the spec's role object: the list of category names. */
export function categoriesOf(doc: PermissionDoc | null): Category[] {
  return CATEGORIES.filter((c) => allows(doc, c));
}

export function docOf(categories: readonly Category[]): PermissionDoc {
  return { api: Object.fromEntries(categories.map((c) => [c, {}])) as PermissionDoc['api'] };
}

/** What both documents grant (a team key is bounded by its member's role); null (full access) is the identity. */
export function intersect(a: PermissionDoc | null, b: PermissionDoc | null): PermissionDoc | null {
  if (a === null) return b;
  if (b === null) return a;
  return docOf(CATEGORIES.filter((c) => a.api[c] !== undefined && b.api[c] !== undefined));
}

/** True when `inner` grants nothing that `outer` does not (a key never gets more rights than its creator). */
export function isSubset(inner: PermissionDoc | null, outer: PermissionDoc | null): boolean {
  if (outer === null) return true;
  if (inner === null) return CATEGORIES.every((c) => outer.api[c] !== undefined);
  return Object.keys(inner.api).every((c) => outer.api[c as Category] !== undefined);
}
