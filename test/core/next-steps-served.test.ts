import { expect } from 'chai';
import { RouteTable } from '../../core/http/pipeline';
import { defineRoute, ok } from '../../core/http/route';
import { client } from '../support/http';
import { startTestService } from '../support/service';

describe('next steps of a refusal point only at routes this instance serves', function () {
  this.timeout(60_000);

  it('RouteTable.serves matches a step path with placeholders or concrete values against the route templates, the query ignored', () => {
    const table = new RouteTable();
    table.add('t', defineRoute({ id: 't.one', method: 'post', path: '/api/things/:id/claim', summary: 's', auth: 'public', handler: () => ok({}) }));
    table.add('t', defineRoute({ id: 't.two', method: 'get', path: '/api/things', summary: 's', auth: 'public', handler: () => ok({}) }));
    expect(table.serves('POST', '/api/things/{id}/claim')).to.equal(true);
    expect(table.serves('POST', '/api/things/<THING_ID>/claim')).to.equal(true);
    expect(table.serves('POST', '/api/things/th_123/claim')).to.equal(true);
    expect(table.serves('GET', '/api/things?limit=5')).to.equal(true);
    expect(table.serves('GET', '/api/things/th_123/claim')).to.equal(false);
    expect(table.serves('POST', '/api/things/a/b/claim')).to.equal(false);
    expect(table.serves('POST', '/api/auth/signin')).to.equal(false);
  });

  it('a 401 offers signing in only where people can sign in (the accounts plugin)', async () => {
    const withAccounts = await startTestService();
    const without = await startTestService({ enabled: ['health', 'identity', 'usage', 'pricing', 'discovery'] });
    try {
      const actions = async (url: string) => {
        const res = await client(url).post<Record<string, any>>('/api/compute/price', { context: { current_price: 3 } });
        expect(res.status).to.equal(401);
        return (res.body.next as Array<{ action: string }>).map((s) => s.action);
      };
      expect(await actions(withAccounts.url)).to.include('sign_in');
      const bare = await actions(without.url);
      expect(bare).to.not.include('sign_in');
      expect(bare).to.include.members(['register_agent', 'try_demo']);
    } finally {
      await withAccounts.close();
      await without.close();
    }
  });
});
