import fc from 'fast-check';

export type JsonPath = Array<string | number>;

/** One change to a valid request body: what a careless or hostile client sends instead. */
export type BodyMutation =
  | { kind: 'replace'; path: JsonPath; value: unknown }
  | { kind: 'delete'; path: JsonPath }
  | { kind: 'add'; path: JsonPath; key: string; value: unknown }
  | { kind: 'whole'; value: unknown };

function nested(depth: number): unknown {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = i % 2 ? [v] : { a: v };
  return v;
}

/**
 * Values that have broken JSON APIs before: wrong types, text PostgreSQL cannot store, numbers at
 * and past the edges of what JSON and JavaScript hold, very long and very deep values.
 */
export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  fc.string({ unit: 'binary', maxLength: 24 }),
  fc.constantFrom('', ' ', '\u0000', 'a\u0000b', '\ud800', 'NaN', 'Infinity', '-1', '1e309', '0x10', '00.5', '../../etc/passwd', "' OR 1=1 --", '%00', '{}', 'null', 'true', '2026-02-30T25:61:00Z'),
  fc.constantFrom(0, -1, -0.000001, 0.1 + 0.2, 1e308, 1e-320, 2 ** 31, 2 ** 53 + 2, 2 ** 63, -(2 ** 63)),
  fc.constantFrom(true, false, null, [], {}, [null], { '': null }, { __proto__: null, constructor: { prototype: {} } }),
  fc.constant('x'.repeat(70_000)),
  fc.constant(nested(300)),
  fc.constant(Array.from({ length: 2_000 }, (_, i) => i)),
);

/** Every path into a JSON value (containers and leaves; the root is the empty path). */
export function pathsOf(value: unknown, prefix: JsonPath = []): JsonPath[] {
  const out: JsonPath[] = [prefix];
  if (Array.isArray(value)) value.forEach((v, i) => out.push(...pathsOf(v, [...prefix, i])));
  else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) out.push(...pathsOf(v, [...prefix, k]));
  return out;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return !!v && typeof v === 'object' && !Array.isArray(v);
}

/** Mutations of one valid body, drawn so every field is reached: replaced, removed, given a stranger beside it. */
export function bodyMutations(valid: unknown): fc.Arbitrary<BodyMutation> {
  const paths = pathsOf(valid);
  const inner = paths.filter((p) => p.length > 0);
  const objects = paths.filter((p) => isObject(at(valid, p)));
  const options: Array<fc.Arbitrary<BodyMutation>> = [fc.record({ kind: fc.constant('whole' as const), value: hostileValue })];
  if (inner.length > 0) {
    options.push(fc.record({ kind: fc.constant('replace' as const), path: fc.constantFrom(...inner), value: hostileValue }));
    options.push(fc.record({ kind: fc.constant('delete' as const), path: fc.constantFrom(...inner) }));
  }
  if (objects.length > 0) {
    const key = fc.oneof(fc.string({ minLength: 1, maxLength: 12 }), fc.constantFrom('__proto__', 'constructor', 'workspace_id', 'owner_id', 'status', 'is_default', 'id'));
    options.push(fc.record({ kind: fc.constant('add' as const), path: fc.constantFrom(...objects), key, value: hostileValue }));
  }
  return fc.oneof(...options);
}

function at(value: unknown, path: JsonPath): unknown {
  let v = value;
  for (const p of path) v = (v as Record<string | number, unknown>)[p];
  return v;
}

/** The body after the mutation (a deep copy; the valid body is left as it was). */
export function applyMutation(valid: unknown, m: BodyMutation): unknown {
  if (m.kind === 'whole') return m.value;
  const copy = structuredClone(valid);
  if (m.kind === 'replace' && m.path.length === 0) return m.value;
  const parentPath = m.kind === 'add' ? m.path : m.path.slice(0, -1);
  const parent = at(copy, parentPath) as Record<string | number, unknown> | unknown[];
  if (m.kind === 'add') {
    // defineProperty: a key named __proto__ must arrive as a key, not change the object's prototype.
    Object.defineProperty(parent, m.key, { value: m.value, enumerable: true, writable: true, configurable: true });
    return copy;
  }
  const last = m.path[m.path.length - 1] as string | number;
  if (m.kind === 'delete') {
    if (Array.isArray(parent)) parent.splice(last as number, 1);
    else delete (parent as Record<string, unknown>)[last];
  } else (parent as Record<string | number, unknown>)[last] = m.value;
  return copy;
}

/** A query string's parameters changed: a declared one (sent or not) given hostile text, or a stranger added. */
export function queryMutations(valid: Record<string, string>, declared: readonly string[]): fc.Arbitrary<Record<string, string>> {
  const text = fc.oneof(
    fc.string({ unit: 'binary', maxLength: 24 }),
    fc.constantFrom('', '-1', '0', '1e309', '999999999999999999999', 'NaN', '\u0000', '%', 'true', 'null', '2026-02-30', 'x'.repeat(5_000)),
  );
  const keys = [...new Set([...Object.keys(valid), ...declared])];
  const options: Array<fc.Arbitrary<Record<string, string>>> = [fc.tuple(fc.string({ minLength: 1, maxLength: 10 }), text).map(([k, v]) => ({ ...valid, [k]: v }))];
  if (keys.length > 0) options.push(fc.tuple(fc.constantFrom(...keys), text).map(([k, v]) => ({ ...valid, [k]: v })));
  return fc.oneof(...options);
}

/** Path-parameter values: ids of the wrong shape, encodings and lengths. */
export const hostileSegment: fc.Arbitrary<string> = fc.oneof(
  fc.string({ unit: 'binary', minLength: 1, maxLength: 40 }),
  fc.constantFrom('0', '-1', 'null', 'undefined', '..', '%2e%2e', 'a b', '\u0000', 'x'.repeat(3_000), '00000000-0000-0000-0000-000000000000', 'fn_' + 'z'.repeat(30)),
);
