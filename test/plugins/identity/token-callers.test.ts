import { expect } from 'chai';
import { client } from '../../support/http';
import { accessToken } from '../../support/identity';
import type { ErrorBody } from '../../support/identity';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';

/** What an OAuth client using access tokens is told: where a token goes, and what asks for a new claim link. */
describe('identity: answers to an OAuth client that uses access tokens', () => {
  let svc: TestService;
  let api: ReturnType<typeof client>;
  let secret: string;
  let token: string;

  before(async () => {
    svc = await startTestService();
    api = client(svc.url);
    const reg = await api.post<{ client_secret: string }>('/api/oauth/register', { client_name: 'token-framework' });
    expect(reg.status, reg.text).to.equal(201);
    secret = reg.body.client_secret;
    token = await accessToken(svc.url, secret);
  });
  after(() => svc.close());

  it('names an access token sent in x-api-key as one, and says it goes in Authorization: Bearer, not that the key is malformed', async () => {
    const res = await api.get<ErrorBody>('/api/me', { 'x-api-key': token });
    expect([res.status, res.body.code]).to.deep.equal([401, 'invalid_credentials']);
    expect(res.body.error).to.match(/OAuth access token/).and.not.match(/malformed/);
    expect(res.body.hint).to.include('Authorization: Bearer');
    // Where it belongs, it works.
    expect((await api.get('/api/me', { authorization: `Bearer ${token}` })).status).to.equal(200);
  });

  it("names the client secret, not the token, in the claim step of a sandbox's refusal; the step works sent so", async () => {
    const refused = await api.post<ErrorBody>('/api/compute/batch', { items: [{ context: { current_price: 3 } }] }, { authorization: `Bearer ${token}` });
    expect([refused.status, refused.body.code], refused.text).to.deep.equal([403, 'plan_restricted']);
    const claim = refused.body.next?.find((n) => n.action === 'claim');
    expect(claim?.description).to.match(/client secret/).and.match(/claim-link/);
    expect((await api.post('/api/agents/claim-link', {}, { 'x-api-key': secret })).status).to.equal(201);
  });
});
