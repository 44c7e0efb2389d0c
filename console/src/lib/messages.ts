/**
 * The API's schema messages name fields as a program sees them ("body.password must NOT have fewer than 8
 * characters", issue 29 item 9): right for an API client, not for a person at a form. This turns the common ones into
 * a sentence about the field as the form labels it; any other message is shown as the API wrote it.
 */

/** How the forms label the fields the API names. */
const FIELD_NAMES: Record<string, string> = {
  email: 'E-mail address',
  password: 'Password',
  new_password: 'New password',
  current_password: 'Current password',
  full_name: 'Full name',
  code: 'Code',
  username: 'E-mail address',
};

function fieldName(path: string): string {
  const last = path.split('.').at(-1) ?? path;
  const known = FIELD_NAMES[last];
  if (known) return known;
  const words = last.replace(/_/g, ' ');
  return words.charAt(0).toUpperCase() + words.slice(1);
}

const characters = (n: string) => `${n} ${n === '1' ? 'character' : 'characters'}`;

/** `body.`, `query.` or `params.` and the path of the field. */
const FIELD = String.raw`(?:body|query|params)\.([\w.]+)`;

const RULES: [RegExp, (m: RegExpExecArray) => string][] = [
  [new RegExp(`^${FIELD} must NOT have fewer than (\\d+) characters$`), (m) => `${fieldName(m[1]!)} must be at least ${characters(m[2]!)} long.`],
  [new RegExp(`^${FIELD} must NOT have more than (\\d+) characters$`), (m) => `${fieldName(m[1]!)} must be at most ${characters(m[2]!)} long.`],
  [new RegExp(`^${FIELD} must match pattern .*$`), (m) => (fieldName(m[1]!) === FIELD_NAMES.email ? 'Enter a valid e-mail address.' : `${fieldName(m[1]!)} is not in the expected form.`)],
  [new RegExp(`^${FIELD} is required$`), (m) => `${fieldName(m[1]!)} is required.`],
];

/** A sentence for a person in place of a schema message; other messages unchanged. */
export function humanMessage(msg: string): string {
  for (const [pattern, say] of RULES) {
    const m = pattern.exec(msg);
    if (m) return say(m);
  }
  return msg;
}
