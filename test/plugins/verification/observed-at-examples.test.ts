import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { observationsBody } from '../../../plugins/verification/schemas';

type Item = Record<string, unknown>;
const RETENTION_DAYS = 180;
const hoursAgo = (now: number, h: number) => new Date(now - h * 3_600_000).toISOString();

/** The JSON block docs/verification.md shows under "POST /api/data/observations". */
function docsObservationExample(): { observations: Item[] } {
  const doc = readFileSync(path.resolve(__dirname, '../../../../docs/verification.md'), 'utf8');
  const block = /`POST \/api\/data\/observations`:\s*```json\n([\s\S]*?)```/.exec(doc)?.[1];
  expect(block, 'the observations example block').to.be.a('string');
  return JSON.parse(block as string) as { observations: Item[] };
}

describe('price observations: observed_at in examples never goes stale', () => {
  it("the docs' observation example shows a placeholder, not a fixed date that ages out, and passes once it is filled with a recent time", () => {
    const example = docsObservationExample();
    const now = Date.now();
    for (const o of example.observations) expect(Date.parse(String(o.observed_at)), String(o.observed_at)).to.be.NaN;
    const filled = { observations: example.observations.map((o) => ({ ...o, observed_at: hoursAgo(now, 1) })) };
    const r = observationsBody(() => now, 500, RETENTION_DAYS).safeParse(filled);
    expect(r.success, JSON.stringify(r.error?.issues)).to.equal(true);
  });

  for (const days of [0, 400, 4000]) {
    it(`the form an observed_at that is no date-time is told suggests a time that is itself accepted (the clock ${days} days on)`, () => {
      const now = Date.now() + days * 86_400_000;
      const body = observationsBody(() => now, 500, RETENTION_DAYS);
      const item = { product_type: 'tea', currency: 'USD', amount: '1.00', observed_at: 'yesterday', source: 'shelf' };
      const refused = body.safeParse({ observations: [item] });
      const reason = refused.error?.issues[0]?.message ?? '';
      const suggested = /such as (\S+)$/.exec(reason)?.[1];
      expect(suggested, reason).to.be.a('string');
      const again = body.safeParse({ observations: [{ ...item, observed_at: suggested }] });
      expect(again.success, JSON.stringify(again.error?.issues)).to.equal(true);
    });
  }
});
