/**
 * Permission categories of scoped API keys and team roles (spec: Authentication), as the Keys and Teams pages show
 * them: checkboxes with words, and the permission document built from the checked ones. The list is the server's own
 * (src/platform/permissions.ts), so a new category appears here without a console change.
 */
import { CATEGORIES, type Category } from '../../../src/platform/permissions.js';

export { CATEGORIES, type Category };

/** What each category lets a key do, in a person's words. */
const WHAT: Record<string, string> = {
  misc: 'Miscellaneous: offers search, GPU names and other read-only service data',
  user_read: 'Read the account, templates, SSH keys and environment variables',
  user_write: 'Change the account, templates, SSH keys and environment variables',
  instance_read: 'Read instances, their logs and volumes',
  instance_write: 'Rent, start, stop and destroy instances',
  billing_read: 'Read credit, charges and invoices',
  billing_write: 'Transfer credit',
  team_read: 'Read team members and roles',
  team_write: 'Invite, remove and change team members and roles',
  machine_read: 'Read your machines, listings and earnings (hosts)',
  machine_write: 'List, unlist and maintain your machines (hosts)',
};

export function describeCategory(c: string): string {
  return WHAT[c] ?? c;
}

/** The permission document `{"api": {"<category>": {}}}` of the checked categories. */
export function permissionDoc(checked: Iterable<string>): { api: Record<string, Record<string, never>> } {
  const set = new Set(checked);
  return { api: Object.fromEntries(CATEGORIES.filter((c) => set.has(c)).map((c) => [c, {}])) };
}

/** The categories a document grants, in the server's order; `all` when it grants every one. */
export function grantedCategories(doc: { api: Record<string, unknown> } | null | undefined): string[] | 'all' {
  if (!doc) return 'all';
  const granted = CATEGORIES.filter((c) => doc.api[c] !== undefined);
  return granted.length === CATEGORIES.length ? 'all' : granted;
}

/** A one-line summary of a key's rights for its row in the list. */
export function describeGrant(doc: { api: Record<string, unknown> } | null | undefined): string {
  const g = grantedCategories(doc);
  if (g === 'all') return 'Full access';
  if (g.length === 0) return 'No access';
  return g.join(', ');
}
