import { expect } from 'chai';
import { Writable } from 'node:stream';
import { Sql } from '../../../core/db/sql';
import { createLogger } from '../../../core/logger';
import { checkTokenSecretUnchanged } from '../../../plugins/identity/services/secrets';
import { client } from '../../support/http';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { registerSandbox } from '../../support/world';

/** API keys are stored as peppered hashes: a start under another pepper than its keys' is refused, not a service where every key answers 401. */
describe('identity: the API key pepper stays the one the keys were made with', function () {
  this.timeout(60_000);
  const started: TestService[] = [];
  const start = async (databaseUrl?: string, apiKeyPepper?: string) => {
    const svc = await startTestService({ ...(databaseUrl ? { databaseUrl } : {}), config: apiKeyPepper ? { identity: { apiKeyPepper } } : {} });
    started.push(svc);
    return svc;
  };
  afterEach(async () => {
    for (const svc of started.splice(0)) await svc.close();
  });

  it('refuses to start with another pepper once keys exist, naming API_KEY_PEPPER; the same pepper starts and its keys work', async () => {
    const first = await start(undefined, 'the-first-pepper-of-this-db');
    const sandbox = await registerSandbox(first);
    const url = first.databaseUrl;
    await first.close();
    started.splice(0);

    const refusal = await start(url, 'another-pepper-entirely').then(
      () => null,
      (err: unknown) => err as Error,
    );
    expect(refusal, 'the start was refused').to.be.instanceOf(Error);
    expect((refusal as Error).message).to.contain('API_KEY_PEPPER is not the pepper the 1 live API keys in this database were made with');
    expect((refusal as Error).message).to.not.contain('another-pepper-entirely');

    const again = await start(url, 'the-first-pepper-of-this-db');
    expect((await client(again.url, { 'x-api-key': sandbox.key }).get('/api/me')).status).to.equal(200);
  });

  it('lets a new pepper take over once every key is revoked (a pepper change after a leak)', async () => {
    const first = await start(undefined, 'a-pepper-that-leaked-once');
    const sandbox = await registerSandbox(first);
    await first.sequelize.query("UPDATE api_keys SET revoked_at = now(), revoked_reason = 'revoked'");
    const url = first.databaseUrl;
    await first.close();
    started.splice(0);
    const next = await start(url, 'a-new-pepper-after-the-leak');
    expect((await client(next.url, { 'x-api-key': sandbox.key }).get('/api/me')).status).to.equal(401);
    expect((await registerSandbox(next)).key).to.match(/^pcs_/);
  });

  it('lets a new pepper take over while no key has been made, and keeps the generated one across starts', async () => {
    const generated = await start();
    const url = generated.databaseUrl;
    await generated.close();
    started.splice(0);
    // No keys yet: an explicit pepper replaces the generated one.
    const chosen = await start(url, 'a-pepper-chosen-after-the-first-start');
    const sandbox = await registerSandbox(chosen);
    await chosen.close();
    started.splice(0);
    const same = await start(url, 'a-pepper-chosen-after-the-first-start');
    expect((await client(same.url, { 'x-api-key': sandbox.key }).get('/api/me')).status).to.equal(200);
  });
});

/** Tokens are HMAC-signed: instances with different signing secrets refuse each other's tokens, so a change is said at start. */
describe('identity: a change of the token signing secret is logged at start', function () {
  this.timeout(60_000);
  let svc: TestService;
  before(async () => {
    svc = await startTestService();
  });
  after(() => svc.close());

  const warnings = async (secret: string): Promise<string[]> => {
    const lines: string[] = [];
    await checkTokenSecretUnchanged(new Sql(svc.sequelize), secret, createLogger('warn', new Writable({ write: (chunk: Buffer, _enc, done) => (lines.push(chunk.toString()), done()) })));
    return lines;
  };

  it('warns once, naming AUTH_TOKEN_SECRET and never the secret, when a start signs with another secret than the last one; the same secret is silent', async () => {
    const secretOf = async (name: string): Promise<string | undefined> =>
      ((await svc.sequelize.query('SELECT value FROM service_secrets WHERE name = $1', { bind: [name], plain: false, raw: true }))[0] as Array<{ value: string }>)[0]?.value;
    const generated = String(await secretOf('token_secret'));
    expect(await secretOf('token_secret_fingerprint'), 'the start recorded the fingerprint of its secret').to.match(/^[0-9a-f]{64}$/).and.not.equal(generated);
    expect(await warnings(generated), 'the secret the service started with').to.deep.equal([]);
    const changed = await warnings('an-operator-chosen-signing-secret');
    expect(changed).to.have.length(1);
    expect(changed[0]).to.contain('AUTH_TOKEN_SECRET is not the secret this database').and.contain('every instance the same AUTH_TOKEN_SECRET');
    expect(changed[0]).to.not.contain('an-operator-chosen-signing-secret').and.not.contain(generated);
    expect(await warnings('an-operator-chosen-signing-secret'), 'the new secret is now the recorded one').to.deep.equal([]);
    expect(await warnings(generated), 'a second instance still on the old secret').to.have.length(1);
  });
});
