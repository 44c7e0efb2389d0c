// The strict coercion of platform/validation.ts on its own, through Fastify's Ajv compiler as the app runs it: the
// cases no route of today's API exercises end to end (query arrays, nested and intersected objects, nullable fields).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Type } from 'typebox';
import AjvCompilerModule from '@fastify/ajv-compiler';
import { strictValidators, type ValidatorFactory } from '../src/platform/validation.js';

const factory = strictValidators((AjvCompilerModule as unknown as () => ValidatorFactory)());
const compile = factory({}, { customOptions: { coerceTypes: false, useDefaults: true, allowUnionTypes: true } });

function check(schema: unknown, httpPart: string, data: unknown): { ok: boolean; data: unknown; errors: unknown } {
  const validate = compile({ schema: schema as Record<string, unknown>, httpPart });
  const ok = validate(data) === true;
  return { ok, data, errors: validate.errors };
}

test('query: a single value where an array is expected becomes a one-element array, its items coerced', () => {
  const schema = Type.Object({ ids: Type.Optional(Type.Array(Type.Integer())) });
  assert.deepEqual(check(schema, 'querystring', { ids: '7' }), { ok: true, data: { ids: [7] }, errors: null });
  assert.deepEqual(check(schema, 'querystring', { ids: ['7', '8'] }).data, { ids: [7, 8] });
  assert.equal(check(schema, 'querystring', { ids: ['7', '0x8'] }).ok, false);
  // In a body an array is a JSON array.
  assert.equal(check(schema, 'body', { ids: 7 }).ok, false);
});

test('booleans: JSON booleans in a body; true and false as text only in a query, path or header', () => {
  const schema = Type.Object({ flag: Type.Boolean() });
  assert.equal(check(schema, 'body', { flag: 'true' }).ok, false);
  assert.equal(check(schema, 'body', { flag: 1 }).ok, false);
  assert.deepEqual(check(schema, 'querystring', { flag: 'false' }).data, { flag: false });
  assert.deepEqual(check(schema, 'params', { flag: 'true' }).data, { flag: true });
  assert.equal(check(schema, 'querystring', { flag: '1' }).ok, false);
});

test('null: kept where the schema allows it, dropped from an optional field that does not, refused where required', () => {
  const schema = Type.Object({
    required_n: Type.Integer(),
    optional_n: Type.Optional(Type.Integer({ default: 4 })),
    nullable_n: Type.Optional(Type.Unsafe<number | null>({ type: ['integer', 'null'] })),
  });
  assert.deepEqual(check(schema, 'body', { required_n: 1, optional_n: null, nullable_n: null }).data, { required_n: 1, optional_n: 4, nullable_n: null });
  assert.equal(check(schema, 'body', { required_n: null }).ok, false);
});

test('nested and intersected objects are coerced field by field; strings stay strings', () => {
  const schema = Type.Intersect([
    Type.Object({ a: Type.Object({ n: Type.Number(), s: Type.String() }) }),
    Type.Object({ b: Type.Optional(Type.Integer()) }),
  ]);
  assert.deepEqual(check(schema, 'body', { a: { n: '2.5', s: 'x' }, b: '3' }).data, { a: { n: 2.5, s: 'x' }, b: 3 });
  assert.equal(check(schema, 'body', { a: { n: 1, s: 5 } }).ok, false);
  // A union of a number and a string takes text as text.
  const either = Type.Object({ v: Type.Union([Type.Number(), Type.String()]) });
  assert.deepEqual(check(either, 'body', { v: '8.0' }).data, { v: '8.0' });
});

test('integers: decimal digits with an optional minus; numbers: JSON number grammar', () => {
  const schema = Type.Object({ i: Type.Optional(Type.Integer()), n: Type.Optional(Type.Number()) });
  for (const [text, value] of [['0', 0], ['-3', -3], ['2147483647', 2147483647]] as const) assert.equal((check(schema, 'params', { i: text }).data as any).i, value);
  for (const text of ['0x1', '1e3', '1.0', '01', '+1', ' 1', '1 ', '', '-', '١']) assert.equal(check(schema, 'params', { i: text }).ok, false, text);
  for (const [text, value] of [['0.5', 0.5], ['-2', -2], ['1e3', 1000], ['8.0', 8], ['1E-2', 0.01]] as const) assert.equal((check(schema, 'params', { n: text }).data as any).n, value);
  for (const text of ['0x1', '.5', '5.', '1e', 'Infinity', 'NaN', '1_000', ' 1']) assert.equal(check(schema, 'params', { n: text }).ok, false, text);
});
