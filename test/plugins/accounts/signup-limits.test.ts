import { expect } from 'chai';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { client } from '../../support/http';
import type { HttpResult } from '../../support/http';
import { expectRetryAfter, identityConfig, signUp, uniqueEmail } from '../../support/identity';
import type { ErrorBody } from '../../support/identity';
import { startTestService, testConfig } from '../../support/service';
import type { TestService } from '../../support/service';

type Api = ReturnType<typeof client>;

function signUpFrom(api: Api, address: string, email = uniqueEmail()): Promise<HttpResult<ErrorBody>> {
  return api.post<ErrorBody>('/api/auth/signup', { email, password: 'correct horse battery', date_of_birth: '1990-12-10' }, { 'x-forwarded-for': address });
}

async function peopleCount(svc: TestService): Promise<number> {
  const row = await svc.sequelize.query(`SELECT count(*)::int AS n FROM people`, { plain: true });
  return (row as { n: number } | null)?.n ?? 0;
}

/** A new wallet's first sign-in (which creates its account) from `address`. */
async function walletFirstSignIn(api: Api, address: string): Promise<HttpResult<ErrorBody>> {
  const wallet = privateKeyToAccount(generatePrivateKey());
  const from = { 'x-forwarded-for': address };
  const nonce = await api.post<{ message: string }>('/api/auth/wallet/nonce', { address: wallet.address }, from);
  expect(nonce.status, nonce.text).to.equal(200);
  const signature = await wallet.signMessage({ message: nonce.body.message });
  return api.post<ErrorBody>('/api/auth/wallet/signin', { message: nonce.body.message, signature, date_of_birth: '1990-12-10' }, from);
}

function expectSignupQuotaRefusal(res: HttpResult<ErrorBody>, scope: RegExp, limit: Record<string, number>): void {
  expectRetryAfter(res);
  expect(res.body.code).to.equal('daily_quota_exceeded');
  expect(res.body.error).to.match(/daily sign-up quota/i).and.match(scope);
  expect(res.body.limit).to.deep.include(limit);
  expect(res.body.retry_after).to.be.at.most(86_400);
  expect(res.body.hint).to.match(/00:00 UTC/);
}

describe('accounts: daily sign-up limits (SIGNUPS_PER_ADDRESS_PER_DAY, SIGNUPS_PER_DAY)', () => {
  it('defaults to 20 sign-ups per address and 2000 overall per day', () => {
    expect(testConfig().limits.signups).to.deep.equal({ perAddressPerDay: 20, overallPerDay: 2000 });
  });

  it('answers the 21st sign-up of the day from one address with 429 at the default per-address limit; another address still signs up', async () => {
    const svc = await startTestService({ config: identityConfig({ signups: { perAddressPerDay: 20, overallPerDay: 2000 } }) });
    try {
      const api = client(svc.url);
      for (let i = 0; i < 20; i++) expect((await signUpFrom(api, '198.51.100.40')).status, `sign-up ${i + 1}`).to.equal(201);
      expectSignupQuotaRefusal(await signUpFrom(api, '198.51.100.40'), /network address/, { per_address_per_day: 20, overall_per_day: 2000 });
      expect((await signUpFrom(api, '198.51.100.41')).status).to.equal(201);
    } finally {
      await svc.close();
    }
  });

  it('counts a sign-up refused because the email has an account as a rejected credential of the address: emails cannot be tested faster than sign-in allows', async () => {
    const svc = await startTestService({ config: identityConfig({ rateLimit: { failedAuthPerAddressPer15Min: 3 } }) });
    try {
      const api = client(svc.url);
      const email = uniqueEmail();
      expect((await signUpFrom(api, '198.51.100.60', email)).status).to.equal(201);
      for (let i = 0; i < 3; i++) {
        const taken = await signUpFrom(api, '198.51.100.60', email);
        expect(taken.status, taken.text).to.equal(409);
        expect(taken.body.code).to.equal('conflict');
      }
      // Over the allowance: refused before anything is looked up, a new email too.
      const locked = await signUpFrom(api, '198.51.100.60', email);
      expect(locked.status, locked.text).to.equal(429);
      expect(locked.body.code).to.equal('rate_limited');
      expect(locked.body.limit).to.deep.equal({ rejected_credentials_per_15_minutes: 3 });
      expectRetryAfter(locked);
      expect((await signUpFrom(api, '198.51.100.60')).status).to.equal(429);
      // Another address is not held back.
      expect((await signUpFrom(api, '198.51.100.61')).status).to.equal(201);
    } finally {
      await svc.close();
    }
  });

  describe('with small limits', () => {
    let svc: TestService;
    let api: Api;

    before(async () => {
      svc = await startTestService({ config: identityConfig({ signups: { perAddressPerDay: 2, overallPerDay: 8 } }) });
      api = client(svc.url);
    });
    after(() => svc.close());

    it('refuses the sign-up over the per-address daily limit with 429 daily_quota_exceeded, retry_after equal to Retry-After, limit and a hint to sign in instead; nothing is created', async () => {
      const taken = await signUp(svc.url, { address: '198.51.100.50' });
      // A sign-up that creates nothing (the email is taken) does not count.
      expect((await signUpFrom(api, '198.51.100.50', taken.email)).status).to.equal(409);
      expect((await signUpFrom(api, '198.51.100.50')).status).to.equal(201);
      const before = await peopleCount(svc);
      const refused = await signUpFrom(api, '198.51.100.50');
      expectSignupQuotaRefusal(refused, /network address/, { per_address_per_day: 2 });
      expect(refused.body.hint).to.match(/POST \/api\/auth\/signin/);
      expect(await peopleCount(svc)).to.equal(before);
      // The same address written as IPv4-mapped IPv6 is the same address.
      expect((await signUpFrom(api, '::ffff:198.51.100.50')).status).to.equal(429);
      expect((await signUpFrom(api, '198.51.100.51')).status).to.equal(201);
    });

    it("counts a new wallet's first sign-in as a sign-up of its address, and refuses it over the limit the same way", async () => {
      expect((await walletFirstSignIn(api, '198.51.100.60')).status).to.equal(201);
      expect((await signUpFrom(api, '198.51.100.60')).status).to.equal(201);
      const refused = await walletFirstSignIn(api, '198.51.100.60');
      expectSignupQuotaRefusal(refused, /network address/, { per_address_per_day: 2 });
    });

    it('counts the sign-ups of every IPv6 address in one /64 as one address (RATE_LIMIT_IPV6_PREFIX), another /64 apart', async () => {
      expect((await signUpFrom(api, '2001:db8:1::1')).status).to.equal(201);
      expect((await signUpFrom(api, '2001:db8:1::2')).status).to.equal(201);
      expectSignupQuotaRefusal(await signUpFrom(api, '2001:db8:1::3'), /network address/, { per_address_per_day: 2 });
      expect((await signUpFrom(api, '2001:db8:2::1')).status).to.equal(201);
    });

    it('refuses sign-ups over the overall daily limit with 429 daily_quota_exceeded naming the service, from any address', async () => {
      // Eight people so far; the next sign-up from a fresh address is over SIGNUPS_PER_DAY.
      expect(await peopleCount(svc)).to.equal(8);
      const refused = await signUpFrom(api, '203.0.113.90');
      expectSignupQuotaRefusal(refused, /service/, { overall_per_day: 8 });
      expect(refused.body.hint).to.match(/sign in/);
      expect(await peopleCount(svc)).to.equal(8);
    });
  });

  it("keeps the day's sign-up counts across a restart without Redis: per address (as a digest, an IPv6 caller's network) and overall", async () => {
    const config = identityConfig({ signups: { perAddressPerDay: 2, overallPerDay: 5 } });
    const svc = await startTestService({ config });
    try {
      const api = client(svc.url);
      expect((await signUpFrom(api, '203.0.113.70')).status).to.equal(201);
      expect((await signUpFrom(api, '203.0.113.70')).status).to.equal(201);
      expect((await signUpFrom(api, '2001:db8:9::1')).status).to.equal(201);
      expect((await signUpFrom(api, '2001:db8:9::2')).status).to.equal(201);
      const [kept] = await svc.sequelize.query(`SELECT signed_up_from_hash FROM people`);
      expect((kept as Array<{ signed_up_from_hash: string }>).map((r) => r.signed_up_from_hash)).to.satisfy((hashes: string[]) => hashes.length === 4 && hashes.every((h) => /^[0-9a-f]{32}$/.test(h)));
      const restarted = await startTestService({ config, databaseUrl: svc.databaseUrl });
      try {
        const again = client(restarted.url);
        expectSignupQuotaRefusal(await signUpFrom(again, '203.0.113.70'), /network address/, { per_address_per_day: 2 });
        expectSignupQuotaRefusal(await signUpFrom(again, '2001:db8:9::3'), /network address/, { per_address_per_day: 2 });
        expect((await signUpFrom(again, '203.0.113.71')).status).to.equal(201);
        expectSignupQuotaRefusal(await signUpFrom(again, '203.0.113.72'), /service/, { overall_per_day: 5 });
      } finally {
        await restarted.close();
      }
    } finally {
      await svc.close();
    }
  });
});
