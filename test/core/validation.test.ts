import { expect } from 'chai';
import { z } from 'zod';
import { ApiError } from '../../core/errors';
import { moneyString } from '../../core/money';
import { validate, validateQuery } from '../../core/validation';

function refusal(schema: z.ZodType, value: unknown): ApiError {
  try {
    validate(schema, value);
  } catch (err) {
    expect(err).to.be.instanceOf(ApiError);
    return err as ApiError;
  }
  expect.fail('expected a validation error');
}

describe('core validation: issues say what to fix', () => {
  it('a refused record key names the key and gives the key schema\'s own message, not zod\'s "Invalid key in record"', () => {
    const schema = z.object({ when: z.record(z.string().regex(/^[a-z]+(\.[a-z]+){0,2}$/, 'a dotted path of at most 3 levels'), z.number()) });
    const err = refusal(schema, { when: { 'a.b.c.d': 1 } });
    expect(err.status).to.equal(400);
    expect(err.extras.issues).to.deep.equal([{ path: 'when.a.b.c.d', reason: 'key "a.b.c.d" not accepted: a dotted path of at most 3 levels' }]);
    expect(err.message).to.equal('Request body failed validation (when.a.b.c.d: key "a.b.c.d" not accepted: a dotted path of at most 3 levels).');
  });

  it('unknown fields of a strict object are each an issue at its own path, named in the reason', () => {
    const err = refusal(z.strictObject({ a: z.number() }), { a: 1, b: 2, c: 3 });
    expect(err.extras.issues).to.deep.equal([
      { path: 'b', reason: 'unknown field "b" not accepted' },
      { path: 'c', reason: 'unknown field "c" not accepted' },
    ]);
  });

  it('an unknown field is told the declared one it likely meant, at any depth (through optional, arrays and records)', () => {
    const schema = z.strictObject({
      config: z.strictObject({ max_cost_per_unit: z.string().optional(), max_latency_ms: z.number().optional() }).optional(),
      items: z.array(z.strictObject({ context: z.record(z.string(), z.unknown()) })),
    });
    const err = refusal(schema, { config: { max_cost: '1', zzz: 1 }, items: [{ contxt: {}, context: {} }], Config: 1 });
    expect(err.extras.issues).to.deep.equal([
      { path: 'config.max_cost', reason: 'unknown field "max_cost" (did you mean "max_cost_per_unit"?) not accepted' },
      { path: 'config.zzz', reason: 'unknown field "zzz" not accepted' },
      { path: 'items.0.contxt', reason: 'unknown field "contxt" (did you mean "context"?) not accepted' },
      { path: 'Config', reason: 'unknown field "Config" (did you mean "config"?) not accepted' },
    ]);
  });

  it('a missing field says it is required and what it takes; a wrong type says what it must be', () => {
    const err = refusal(z.object({ currency: z.string(), n: z.number(), tags: z.array(z.string()), ctx: z.record(z.string(), z.unknown()) }), { n: 'x', ctx: [] });
    expect(err.extras.issues).to.deep.equal([
      { path: 'currency', reason: 'required: a string' },
      { path: 'n', reason: 'must be a number, not a string' },
      { path: 'tags', reason: 'required: an array' },
      { path: 'ctx', reason: 'must be an object, not an array' },
    ]);
  });
});

describe('core validation: one clear reason per field', () => {
  it('a missing choice says it is required and lists the options', () => {
    const err = refusal(z.strictObject({ execution_type: z.enum(['external_api', 'pipeline']) }), {});
    expect(err.extras.issues).to.deep.equal([{ path: 'execution_type', reason: 'required: one of "external_api"|"pipeline"' }]);
    // A wrong value keeps zod's wording, which names the options.
    expect(refusal(z.strictObject({ execution_type: z.enum(['external_api', 'pipeline']) }), { execution_type: 'x' }).extras.issues?.[0]?.reason).to.match(/expected one of/);
  });

  it('a number over several maxima is told the tightest only (not the safe-integer range beside it)', () => {
    const err = refusal(z.strictObject({ timeout_ms: z.number().int().min(1).max(30_000) }), { timeout_ms: 1e308 });
    expect(err.extras.issues).to.deep.equal([{ path: 'timeout_ms', reason: 'must be at most 30000' }]);
  });

  it("says a bound in words (zod's default wording is not a sentence), and keeps a schema's own message", () => {
    const reasons = (schema: z.ZodType, value: unknown) => refusal(z.strictObject({ v: schema }), { v: value }).extras.issues?.map((i) => i.reason);
    expect(reasons(z.string().min(2), 'a')).to.deep.equal(['must be at least 2 characters']);
    expect(reasons(z.string().max(1), 'ab')).to.deep.equal(['must be at most 1 character']);
    expect(reasons(z.number().gt(0), 0)).to.deep.equal(['must be above 0']);
    expect(reasons(z.number().lt(10), 10)).to.deep.equal(['must be below 10']);
    expect(reasons(z.number().min(1), 0)).to.deep.equal(['must be at least 1']);
    expect(reasons(z.array(z.string()).min(1), [])).to.deep.equal(['must have at least 1 item']);
    expect(reasons(z.array(z.number()).max(2), [1, 2, 3])).to.deep.equal(['must have at most 2 items']);
    expect(reasons(z.string().min(2, 'a name of two letters or more'), 'a')).to.deep.equal(['a name of two letters or more']);
    expect(reasons(z.string().length(3), 'ab')).to.deep.equal(['must be exactly 3 characters']);
    expect(reasons(z.array(z.number()).length(2), [1, 2, 3])).to.deep.equal(['must have exactly 2 items']);
  });

  it('a money amount with too many digits says so, not that it is no decimal string', () => {
    const err = refusal(z.strictObject({ cost_per_unit: moneyString }), { cost_per_unit: '0.00000000000000000000000000000000001' });
    expect(err.extras.issues?.[0]?.reason).to.equal('must be a non-negative decimal string such as "12.50", with at most 18 digits before the point and 18 after');
  });
});

describe('core validation: query parameters', () => {
  const listQuery = z.object({ built_in: z.enum(['true', 'false']).optional(), limit: z.coerce.number().int().min(1).max(100).optional(), cursor: z.string().optional() });
  const queryRefusal = (schema: z.ZodType, query: Record<string, unknown>): ApiError => {
    try {
      validateQuery(schema, query);
    } catch (err) {
      expect(err).to.be.instanceOf(ApiError);
      return err as ApiError;
    }
    expect.fail('expected a validation error');
  };

  it('refuses a parameter the route does not declare, naming the one it likely meant and those accepted', () => {
    const err = queryRefusal(listQuery, { builtin: 'true' });
    expect(err.status).to.equal(400);
    expect(err.code).to.equal('validation_error');
    expect(err.extras.issues).to.deep.equal([{ path: 'builtin', reason: 'unknown query parameter; did you mean "built_in"? (accepted: built_in, limit, cursor)' }]);
    expect(err.message).to.equal('Request query failed validation (builtin: unknown query parameter; did you mean "built_in"? (accepted: built_in, limit, cursor)).');
    expect(err.extras.hint).to.equal('Correct or remove the query parameters listed in issues; accepted: built_in, limit, cursor.');
  });

  it('says a parameter was sent more than once, rather than an option list holding both values sent or a type', () => {
    expect(queryRefusal(listQuery, { built_in: ['true', 'false'] }).extras.issues).to.deep.equal([{ path: 'built_in', reason: 'sent 2 times (built_in=true&built_in=false); send it once' }]);
    expect(queryRefusal(listQuery, { limit: ['1', '2', '3'] }).extras.issues).to.deep.equal([{ path: 'limit', reason: 'sent 3 times (limit=1&limit=2&limit=3); send it once' }]);
    // One that takes several keeps its own issues, at an element's path.
    const tagged = z.object({ tag: z.union([z.string().max(3), z.array(z.string().max(3))]).optional() });
    expect(validateQuery(tagged, { tag: ['a', 'b'] })).to.deep.equal({ tag: ['a', 'b'] });
    expect(queryRefusal(tagged, { tag: ['a', 'toolong'] }).extras.issues?.[0]?.reason).to.not.match(/send it once/);
  });

  it('suggests by case and separators, or one or two edits, and nothing for a name far from every one', () => {
    expect(queryRefusal(listQuery, { BuiltIn: 'true' }).extras.issues?.[0]?.reason).to.match(/did you mean "built_in"/);
    expect(queryRefusal(listQuery, { limt: '5' }).extras.issues?.[0]?.reason).to.match(/did you mean "limit"/);
    expect(queryRefusal(listQuery, { cursr: 'x' }).extras.issues?.[0]?.reason).to.match(/did you mean "cursor"/);
    expect(queryRefusal(listQuery, { page: '2' }).extras.issues?.[0]?.reason).to.equal('unknown query parameter (accepted: built_in, limit, cursor)');
    expect(queryRefusal(listQuery, { page: '2', sort: 'x' }).extras.issues?.map((i) => i.path)).to.deep.equal(['page', 'sort']);
  });

  it('looks through refinements and pipes to the declared names, and passes declared ones to the schema', () => {
    const refined = listQuery.superRefine(() => undefined);
    expect(queryRefusal(refined, { builtin: 'true' }).extras.issues?.[0]?.path).to.equal('builtin');
    const piped = listQuery.transform((q) => ({ ...q, seen: true }));
    expect(queryRefusal(piped, { limt: '1' }).extras.issues?.[0]?.path).to.equal('limt');
    expect(validateQuery(piped, { limit: '5' })).to.deep.equal({ limit: 5, seen: true });
    expect(queryRefusal(listQuery, { limit: '0' }).extras.issues?.[0]?.path).to.equal('limit');
    expect(validateQuery(z.object({}), {})).to.deep.equal({});
    expect(queryRefusal(z.object({}), { x: '1' }).extras.issues?.[0]?.reason).to.equal('unknown query parameter (this route takes none)');
  });

  it('reports the declared parameters\' own problems beside the unknown ones, all at once as a body\'s', () => {
    const err = queryRefusal(listQuery, { built_in: 'maybe', foo: '1', limit: '0' });
    expect(err.extras.issues?.map((i) => i.path)).to.deep.equal(['foo', 'built_in', 'limit']);
    expect(queryRefusal(listQuery, { foo: '1', limit: '5' }).extras.issues?.map((i) => i.path)).to.deep.equal(['foo']);
  });
});

