import { expect } from 'chai';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { client } from '../../support/http';

describe('key verification on the hot path', () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService();
  });
  after(() => svc.close());

  it('answers repeated authenticated requests without a database query once the key is cached', async () => {
    const api = client(svc.url);
    const reg = await api.post<Record<string, any>>('/api/agents/register', { name: 'hot-path' });
    const key = reg.body.api_key.key as string;
    expect((await api.get('/api/me', { 'x-api-key': key })).status).to.equal(200);
    let queries = 0;
    const original = svc.sequelize.query.bind(svc.sequelize);
    svc.sequelize.query = ((...args: Parameters<typeof original>) => {
      queries++;
      return original(...args);
    }) as typeof original;
    try {
      for (let i = 0; i < 50; i++) expect((await api.get('/api/me', { 'x-api-key': key })).status).to.equal(200);
    } finally {
      svc.sequelize.query = original;
    }
    expect(queries).to.equal(0);
  });
});
