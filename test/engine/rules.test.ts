import { expect } from 'chai';
import { policySchema } from '../../engine';
import type { PolicyShape } from '../../engine';
import { conditionHolds, firstMatchingRule, readPath, ruleSchema } from '../../engine/routing/rules';
import type { Condition, Rule } from '../../engine/routing/rules';

const base: PolicyShape = { name: 'p', strategy: 'default', is_default: false, fallback_chain: [], fallback_function: null, config: {} };
const issuesOf = (value: unknown) => {
  const r = policySchema.safeParse(value);
  return r.success ? [] : r.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message }));
};
const holds = (cond: Condition, value: unknown, found = true) => conditionHolds(cond, found, value);

describe('engine: routing policy shape and rules', () => {
  describe('policy validation', () => {
    it('strategy policy requires config.rules (at least one)', () => {
      expect(issuesOf({ ...base, strategy: 'policy' }).map((i) => i.path)).to.deep.equal(['config.rules']);
      expect(issuesOf({ ...base, strategy: 'policy', config: { rules: [] } }).map((i) => i.path)).to.deep.equal(['config.rules']);
      expect(issuesOf({ ...base, strategy: 'policy', config: { rules: [{ when: { tier: 'gold' }, use: 'cost-plus' }] } })).to.deep.equal([]);
    });

    it('strategy weighted requires config.weights with a positive weight', () => {
      expect(issuesOf({ ...base, strategy: 'weighted' }).map((i) => i.path)).to.deep.equal(['config.weights']);
      expect(issuesOf({ ...base, strategy: 'weighted', config: { weights: { 'cost-plus': 0 } } }).map((i) => i.path)).to.deep.equal(['config.weights']);
      expect(issuesOf({ ...base, strategy: 'weighted', config: { weights: { 'cost-plus': -1, 'charm-pricing': 2 } } })).to.not.deep.equal([]);
      expect(issuesOf({ ...base, strategy: 'weighted', config: { weights: { 'cost-plus': 0, 'charm-pricing': 2 } } })).to.deep.equal([]);
    });

    it('strategy priority (the seventh) requires config.order', () => {
      expect(issuesOf({ ...base, strategy: 'priority' }).map((i) => i.path)).to.deep.equal(['config.order']);
      expect(issuesOf({ ...base, strategy: 'priority', config: { order: ['cost-plus'] } })).to.deep.equal([]);
    });

    it('refuses unknown strategies and unknown config keys', () => {
      expect(issuesOf({ ...base, strategy: 'random' })).to.not.deep.equal([]);
      expect(issuesOf({ ...base, config: { max_price: '1' } })).to.not.deep.equal([]);
    });

    it('max_cost_per_unit is a non-negative decimal string, max_latency_ms a positive number', () => {
      expect(issuesOf({ ...base, config: { max_cost_per_unit: '0.002', max_latency_ms: 50 } })).to.deep.equal([]);
      expect(issuesOf({ ...base, config: { max_cost_per_unit: 0.002 } }).map((i) => i.path)).to.deep.equal(['config.max_cost_per_unit']);
      expect(issuesOf({ ...base, config: { max_cost_per_unit: '-1' } }).map((i) => i.path)).to.deep.equal(['config.max_cost_per_unit']);
      expect(issuesOf({ ...base, config: { max_latency_ms: 0 } }).map((i) => i.path)).to.deep.equal(['config.max_latency_ms']);
    });
  });

  describe('rule shape', () => {
    const ok = (rule: unknown) => ruleSchema.safeParse(rule).success;

    it('refuses an unknown operator and a condition without operators', () => {
      expect(ok({ when: { tier: { regex: '^g' } }, use: 'cost-plus' })).to.equal(false);
      expect(ok({ when: { tier: {} }, use: 'cost-plus' })).to.equal(false);
      expect(ok({ when: { tier: { in: ['gold'] } }, use: 'cost-plus' })).to.equal(true);
    });

    it('accepts dotted paths up to 8 levels (a leading context. is optional) and refuses deeper ones', () => {
      expect(ok({ when: { 'a.b.c.d.e.f.g.h': 1 }, use: 'x' })).to.equal(true);
      expect(ok({ when: { 'context.a.b.c.d.e.f.g.h': 1 }, use: 'x' })).to.equal(true);
      expect(ok({ when: { 'a.b.c.d.e.f.g.h.i': 1 }, use: 'x' })).to.equal(false);
      expect(ok({ when: { 'items.0.sku': 'A' }, use: 'x' })).to.equal(true);
      expect(ok({ when: { 'a..b': 1 }, use: 'x' })).to.equal(false);
    });

    it('refuses __proto__, constructor and prototype as path steps, naming the path (a JSON "__proto__" key is not dropped silently)', () => {
      for (const path of ['__proto__', 'customer.__proto__', 'context.constructor', 'a.prototype.b']) {
        const parsed = ruleSchema.safeParse(JSON.parse(`{"when": {${JSON.stringify(path)}: {"exists": true}, "product_type": "coffee"}, "use": "x"}`));
        expect(parsed.success, path).to.equal(false);
        expect(parsed.error?.issues.map((i) => i.path.join('.'))).to.deep.equal([`when.${path}`]);
      }
    });

    it('needs at least one condition and a function', () => {
      expect(ok({ when: {}, use: 'x' })).to.equal(false);
      expect(ok({ when: { a: 1 } })).to.equal(false);
    });

    it('gt, gte, lt and lte take numbers only', () => {
      expect(ok({ when: { qty: { gt: '5' } }, use: 'x' })).to.equal(false);
    });
  });

  describe('evaluation', () => {
    const ctx = { customer: { tier: 'gold', tags: ['b2b', 'eu'] }, items: [{ sku: 'SKU-1', qty: 3 }], qty: 10, note: null };

    it('an array step is a plain index: items.length and items.00 are not found', () => {
      expect(readPath(ctx, 'items.length')).to.deep.equal({ found: false, value: undefined });
      expect(readPath(ctx, 'items.00.sku')).to.deep.equal({ found: false, value: undefined });
    });

    it('reads deep paths through objects and array indexes', () => {
      expect(readPath(ctx, 'customer.tier')).to.deep.equal({ found: true, value: 'gold' });
      expect(readPath(ctx, 'items.0.sku')).to.deep.equal({ found: true, value: 'SKU-1' });
      expect(readPath(ctx, 'context.items.0.qty')).to.deep.equal({ found: true, value: 3 });
      expect(readPath(ctx, 'items.1.sku').found).to.equal(false);
      expect(readPath(ctx, 'customer.tier.name').found).to.equal(false);
      expect(readPath(ctx, 'note')).to.deep.equal({ found: true, value: null });
    });

    it('compares with types: eq 10 never matches "10", gt on a string never matches', () => {
      expect(holds(10, '10')).to.equal(false);
      expect(holds({ eq: 10 }, '10')).to.equal(false);
      expect(holds({ eq: 10 }, 10)).to.equal(true);
      expect(holds({ gt: 5 }, '10')).to.equal(false);
      expect(holds({ gt: 5 }, 10)).to.equal(true);
      expect(holds({ in: [10] }, '10')).to.equal(false);
      expect(holds({ lte: 10, gte: 10 }, 10)).to.equal(true);
    });

    it('every operator of a condition must hold', () => {
      expect(holds({ gt: 5, lt: 8 }, 10)).to.equal(false);
      expect(holds({ gt: 5, lt: 12 }, 10)).to.equal(true);
      expect(holds({ starts_with: 'SKU', contains: 'X' }, 'SKU-1')).to.equal(false);
    });

    it('exists, ne and nin treat a missing value as absent', () => {
      expect(holds({ exists: false }, undefined, false)).to.equal(true);
      expect(holds({ exists: true }, undefined, false)).to.equal(false);
      expect(holds({ ne: 'gold' }, undefined, false)).to.equal(true);
      expect(holds({ nin: ['gold'] }, 'silver')).to.equal(true);
      expect(holds('gold', undefined, false)).to.equal(false);
    });

    it('contains works on strings and on arrays of scalars', () => {
      expect(holds({ contains: 'b2b' }, ['b2b', 'eu'])).to.equal(true);
      expect(holds({ contains: 'old' }, 'gold')).to.equal(true);
      expect(holds({ contains: 'x' }, 5)).to.equal(false);
    });

    it('a rule holds only when every key holds; the first rule that holds wins', () => {
      const rules: Rule[] = [
        { when: { 'customer.tier': 'gold', qty: { lt: 5 } }, use: 'a' },
        { when: { 'customer.tags': { contains: 'eu' } }, use: 'b' },
        { when: { 'customer.tier': 'gold' }, use: 'c' },
      ];
      expect(firstMatchingRule(rules, ctx)).to.equal(1);
      expect(firstMatchingRule(rules, { ...ctx, qty: 2 })).to.equal(0);
      expect(firstMatchingRule(rules, { customer: { tier: 'silver' } })).to.equal(-1);
    });
  });
});
