import { expect } from 'chai';
import { z } from 'zod';
import { ApiError } from '../../core/errors';
import { validate } from '../../core/validation';

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

  it('unknown fields of a strict object are listed by name', () => {
    const err = refusal(z.strictObject({ a: z.number() }), { a: 1, b: 2, c: 3 });
    expect(err.extras.issues).to.deep.equal([{ path: '(root)', reason: 'unknown fields "b", "c" not accepted' }]);
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
