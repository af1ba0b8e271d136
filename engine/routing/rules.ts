import { z } from 'zod';

/**
 * Policy rules: `{when: {<context path>: <condition>, …}, use: <function id or name>}`. Every key of
 * `when` must hold (conjunction, no early return); rules are tried in order, the first that holds
 * wins. Paths are dotted and may go deep (`customer.tier`, `items.0.sku`; a leading `context.` is
 * optional). A condition is a scalar (equality) or an object of operators, all of which must hold.
 * Comparisons are typed: `gt` on a string never matches, `eq: 10` never matches "10".
 */
const scalar = z.union([z.string().max(500), z.number(), z.boolean(), z.null()]);
export const OPERATORS = ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'nin', 'exists', 'contains', 'starts_with'] as const;

/** What each operator takes, as a refusal of a wrong value says it ("Invalid input" leaves the author guessing). */
const OPERAND: Record<(typeof OPERATORS)[number], string> = {
  eq: 'a string, number, boolean or null',
  ne: 'a string, number, boolean or null',
  gt: 'a number',
  gte: 'a number',
  lt: 'a number',
  lte: 'a number',
  in: 'a list of 1 to 100 strings, numbers, booleans or nulls',
  nin: 'a list of 1 to 100 strings, numbers, booleans or nulls',
  exists: 'true or false',
  contains: 'a string of 1 to 200 characters',
  starts_with: 'a string of 1 to 200 characters',
};

/** JSON reads a number beyond a double's range (1e400) as Infinity, which JSON.stringify would show as null: never sent. */
const shownValue = (v: unknown): string =>
  typeof v === 'number' && !Number.isFinite(v) ? 'a number beyond the range a JSON number can hold here (about ±1.8e308)' : (JSON.stringify(v) ?? String(v)).slice(0, 60);

/** Why a condition is refused: a list, or each wrong operator with what it takes and what came. */
function conditionProblem(iss: { code: string; input?: unknown; errors?: ReadonlyArray<ReadonlyArray<{ path: PropertyKey[]; message: string }>> }): string | undefined {
  if (iss.code !== 'invalid_union') return undefined;
  const v = iss.input;
  if (Array.isArray(v)) return 'a condition is a value or an object of operators, not a list: to match any of several values use {"in": [...]}';
  if (v === null || typeof v !== 'object') return 'a condition is a string of at most 500 characters, a number, a boolean, null, or an object of operators';
  const reasons = (iss.errors?.[1] ?? []).map((i) => {
    const op = i.path[0];
    if (typeof op !== 'string' || !(op in OPERAND)) return i.message;
    return `${op} must be ${OPERAND[op as keyof typeof OPERAND]}, got ${shownValue((v as Record<string, unknown>)[op])}`;
  });
  return reasons.length ? [...new Set(reasons)].join('; ') : undefined;
}

export const conditionSchema = z.union([
  scalar,
  z
    .strictObject({
      eq: scalar.optional(),
      ne: scalar.optional(),
      gt: z.number().optional(),
      gte: z.number().optional(),
      lt: z.number().optional(),
      lte: z.number().optional(),
      in: z.array(scalar).min(1).max(100).optional(),
      nin: z.array(scalar).min(1).max(100).optional(),
      exists: z.boolean().optional(),
      contains: z.string().min(1).max(200).optional(),
      starts_with: z.string().min(1).max(200).optional(),
    }, {
      // Said as an operator, with the ones there are: "unknown field" leaves the author guessing.
      error: (issue) => (issue.code === 'unrecognized_keys' ? `unknown operator${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => JSON.stringify(k)).join(', ')} (operators: ${OPERATORS.join(', ')})` : undefined),
    })
    // Only for a truly empty object: an unknown operator is already reported by name.
    .refine((c) => Object.keys(c).length > 0, { message: `a condition needs at least one operator (${OPERATORS.join(', ')})`, when: (payload) => payload.issues.length === 0 }),
], { error: (iss) => conditionProblem(iss as never) });
export type Condition = z.infer<typeof conditionSchema>;

export const PATH_PATTERN = /^(context\.)?[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+){0,7}$/;

/** Path steps that name an object's machinery, not data: refused (a record parser would drop "__proto__" silently, widening the rule). */
const RESERVED_STEPS = new Set(['__proto__', 'constructor', 'prototype']);

export const ruleSchema = z.strictObject({
  when: z
    .unknown()
    .superRefine((w, ctx) => {
      if (w === null || typeof w !== 'object' || Array.isArray(w)) return;
      for (const path of Object.keys(w)) {
        if (path.replace(/^context\./, '').split('.').some((step) => RESERVED_STEPS.has(step))) {
          ctx.addIssue({ code: 'custom', path: [path], message: '__proto__, constructor and prototype are not context fields' });
        }
      }
    })
    .pipe(
      z
        .record(z.string().regex(PATH_PATTERN, 'a dotted context path such as customer.tier or items.0.sku (at most 8 levels; the first step a letter or _ followed by letters, digits or _, the others letters, digits or _)'), conditionSchema)
        .refine((w) => Object.keys(w).length > 0 && Object.keys(w).length <= 20, 'when needs 1 to 20 conditions'),
    ),
  use: z.string().min(1).max(100),
  name: z.string().max(80).optional(),
});
export type Rule = z.infer<typeof ruleSchema>;

export function readPath(context: Record<string, unknown>, path: string): { found: boolean; value: unknown } {
  let node: unknown = context;
  for (const part of path.replace(/^context\./, '').split('.')) {
    // An array step is an index written plainly (items.0, not items.00 or items.length).
    if (Array.isArray(node)) {
      if (!/^(0|[1-9]\d*)$/.test(part)) return { found: false, value: undefined };
      node = node[Number(part)];
    } else if (node !== null && typeof node === 'object' && Object.prototype.hasOwnProperty.call(node, part)) node = (node as Record<string, unknown>)[part];
    else return { found: false, value: undefined };
    if (node === undefined) return { found: false, value: undefined };
  }
  return { found: true, value: node };
}

const sameScalar = (a: unknown, b: unknown) => typeof a === typeof b && a === b;

export function conditionHolds(cond: Condition, found: boolean, value: unknown): boolean {
  if (cond === null || typeof cond !== 'object') return found && sameScalar(value, cond);
  const checks: boolean[] = [];
  if (cond.exists !== undefined) checks.push(found === cond.exists);
  if (cond.eq !== undefined) checks.push(found && sameScalar(value, cond.eq));
  if (cond.ne !== undefined) checks.push(!found || !sameScalar(value, cond.ne));
  const n = typeof value === 'number' ? value : undefined;
  if (cond.gt !== undefined) checks.push(n !== undefined && n > cond.gt);
  if (cond.gte !== undefined) checks.push(n !== undefined && n >= cond.gte);
  if (cond.lt !== undefined) checks.push(n !== undefined && n < cond.lt);
  if (cond.lte !== undefined) checks.push(n !== undefined && n <= cond.lte);
  if (cond.in !== undefined) checks.push(found && cond.in.some((x) => sameScalar(value, x)));
  if (cond.nin !== undefined) checks.push(!found || !cond.nin.some((x) => sameScalar(value, x)));
  if (cond.contains !== undefined) checks.push(typeof value === 'string' ? value.includes(cond.contains) : Array.isArray(value) && value.some((x) => sameScalar(x, cond.contains)));
  if (cond.starts_with !== undefined) checks.push(typeof value === 'string' && value.startsWith(cond.starts_with));
  return checks.every(Boolean);
}

export function ruleHolds(rule: Rule, context: Record<string, unknown>): boolean {
  return Object.entries(rule.when).every(([path, cond]) => {
    const { found, value } = readPath(context, path);
    return conditionHolds(cond, found, value);
  });
}

/** Index of the first rule that holds, or -1. */
export function firstMatchingRule(rules: readonly Rule[], context: Record<string, unknown>): number {
  return rules.findIndex((r) => ruleHolds(r, context));
}
