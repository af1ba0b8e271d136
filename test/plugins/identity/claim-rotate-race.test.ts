import { expect } from 'chai';
import { client } from '../../support/http';
import { asPerson, claimPath, identityConfig, register, signUp } from '../../support/identity';
import type { ClaimBody, ErrorBody } from '../../support/identity';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';

/**
 * A claim locks the sandbox's workspace row, then revokes its keys; a rotation of the sandbox's key
 * locks the key, then inserts the new key, whose reference to the workspace waits on the claim. A
 * trigger sleeping in the claim (after the workspace is locked, before the keys) holds that window open.
 */
describe('identity: a claim and a rotation of the sandbox key at once', function () {
  this.timeout(30_000);
  let svc: TestService;
  before(async () => {
    svc = await startTestService({ config: identityConfig() });
    await svc.sequelize.query(`CREATE FUNCTION slow_claim_for_test() RETURNS trigger AS $$ BEGIN PERFORM pg_sleep(0.6); RETURN NEW; END $$ LANGUAGE plpgsql`);
    await svc.sequelize.query('CREATE TRIGGER slow_claim_for_test BEFORE UPDATE ON claim_tokens FOR EACH ROW WHEN (NEW.used_at IS NOT NULL) EXECUTE FUNCTION slow_claim_for_test()');
  });
  after(() => svc.close());

  it('ends with one of them refused as it would be alone (the rotation 401, the key revoked by the claim), never a deadlock answered 500', async () => {
    const api = client(svc.url);
    const owner = await signUp(svc.url);
    const reg = await register(svc.url);
    const claim = api.post<ClaimBody>(claimPath(reg), { keep_key: false }, asPerson(owner));
    await new Promise((resolve) => setTimeout(resolve, 250));
    const rotate = await api.post<ErrorBody>('/api/api-keys/rotate', {}, { 'x-api-key': reg.api_key.key });
    const claimed = await claim;
    expect(claimed.status, claimed.text).to.equal(200);
    // As a request after the claim would be told: why the key stopped, and who issues keys now.
    expect([rotate.status, rotate.body.code, rotate.body.retryable], rotate.text).to.deep.equal([401, 'invalid_credentials', false]);
    expect(rotate.body.error).to.match(/^This API key has been revoked: its sandbox workspace was claimed/);
    expect(rotate.headers.get('www-authenticate')).to.match(/error="invalid_token"/);
    const [keys] = (await svc.sequelize.query('SELECT count(*)::int AS n FROM api_keys WHERE workspace_id = $1 AND revoked_at IS NULL', { bind: [reg.workspace.id] })) as [Array<{ n: number }>, unknown];
    expect(keys[0]?.n, 'no key left usable in the claimed sandbox').to.equal(0);
  });
});
