import { expect } from 'chai';
import { Client } from 'pg';
import { startTestService } from '../../support/service';
import { createKey, signUp } from '../../support/world';

const lenient = {
  limits: {
    registrations: { perAddressPerDay: 10_000, overallPerDay: 100_000 },
    rateLimit: { perWorkspacePerMinute: 100_000, perAddressPerMinute: 100_000, failedAuthPerAddressPer15Min: 100_000 },
  },
};

describe('usage events under shutdown', function () {
  this.timeout(60_000);

  it('loses no usage event when the service stops under load: every 200 has its event', async () => {
    const svc = await startTestService({ config: lenient });
    const person = await signUp(svc, 'loaded');
    const key = (await createKey(svc, person, { name: 'load' })).key;
    let firstDone: () => void = () => undefined;
    const first = new Promise<void>((r) => {
      firstDone = r;
    });
    const calls = Array.from({ length: 200 }, (_, i) =>
      fetch(`${svc.url}/api/compute/price`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': key }, body: JSON.stringify({ context: { current_price: i + 1 } }) })
        .then(async (r) => {
          const out = { status: r.status, body: (await r.json().catch(() => ({}))) as Record<string, any> };
          if (r.status === 200) firstDone();
          return out;
        })
        .catch(() => ({ status: 0, body: {} as Record<string, any> })),
    );
    // Stop while the rest are still in flight.
    await first;
    await svc.close();
    const results = await Promise.all(calls);
    const ok = results.filter((r) => r.status === 200);
    expect(ok.length).to.be.greaterThan(0);
    const db = new Client({ connectionString: svc.databaseUrl });
    await db.connect();
    try {
      const ids = ok.map((r) => r.body.receipt.usage_event_id as string);
      const found = await db.query('SELECT count(*)::int AS n FROM usage_events WHERE id = ANY($1::text[])', [ids]);
      expect(found.rows[0].n).to.equal(ok.length);
    } finally {
      await db.end();
    }
  });
});
