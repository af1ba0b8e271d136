import { expect } from 'chai';
import type { Request } from 'express';
import type { Principal } from '../../../core/auth';
import { systemClock } from '../../../core/clock';
import type { Sql } from '../../../core/db/sql';
import { ApiError } from '../../../core/errors';
import { newId } from '../../../core/ids';
import { MemoryKvStore } from '../../../core/kv';
import { createLogger } from '../../../core/logger';
import { TOKENS } from '../../../core/tokens';
import { SandboxAllowance } from '../../../plugins/usage/services/allowance';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { recordSandboxCall } from './helpers';

/**
 * A sandbox's calls count when admitted and a failed one gives its count back when it ends: calls
 * in flight may use the last of the day's allowance only for as long as they run.
 */
describe('sandbox allowance: calls still in flight', function () {
  this.timeout(30_000);
  let svc: TestService;
  let kv: MemoryKvStore;
  let allowance: SandboxAllowance;
  const sandbox = (): Principal => ({ kind: 'api_key', workspaceId: newId('ws'), scopes: null, attributes: { sandbox: true } });
  const request = (principal: Principal) => ({ operation: 'compute' as const, principal, units: 1, req: {} as Request });
  const refusal = (p: Principal) => allowance.admit(request(p)).then(() => null, (err: unknown) => err as ApiError);

  before(async () => {
    svc = await startTestService({ config: { limits: { sandbox: { computeCallsPerDay: 3 } } } });
    kv = new MemoryKvStore(systemClock);
    allowance = new SandboxAllowance(kv, systemClock, svc.config, svc.container.resolve<Sql>(TOKENS.Sql), createLogger('silent'));
  });
  after(async () => {
    await kv.close();
    await svc.close();
  });

  it('answers a call that finds the rest of the day taken by calls still in flight with a 1 s retry, not "daily quota reached"; a released call frees its place', async () => {
    const p = sandbox();
    const inFlight = [await allowance.admit(request(p)), await allowance.admit(request(p)), await allowance.admit(request(p))];
    const err = await refusal(p);
    expect(err).to.be.instanceOf(ApiError);
    expect(err?.code).to.equal('rate_limited');
    expect(err?.message).to.equal('3 calls of this sandbox are still in flight and hold the rest of its 3 calls for today; a call that fails gives its place back.');
    expect(err?.extras.retry_after).to.equal(1);
    expect(err?.extras.limit).to.deep.include({ compute_calls_per_day: 3, in_flight: 3, recorded_today: 0, scope: 'workspace' });
    await inFlight[0]?.release();
    expect(await allowance.admit(request(p)), 'the released place').to.not.equal(null);
  });

  it('says "1 call … is" when one call in flight holds the last place', async () => {
    const p = sandbox();
    const sql = svc.container.resolve<Sql>(TOKENS.Sql);
    for (let i = 0; i < 2; i++) await recordSandboxCall(sql, p.workspaceId);
    const inFlight = await allowance.admit(request(p));
    const err = await refusal(p);
    expect(err?.code, err?.message).to.equal('rate_limited');
    expect(err?.message).to.equal('1 call of this sandbox is still in flight and holds the rest of its 3 calls for today; a call that fails gives its place back.');
    expect(err?.extras.limit).to.deep.include({ in_flight: 1, recorded_today: 2 });
    await inFlight?.commit();
  });

  it('answers daily_quota_exceeded when the day\'s calls are recorded', async () => {
    const p = sandbox();
    const sql = svc.container.resolve<Sql>(TOKENS.Sql);
    for (let i = 0; i < 3; i++) {
      await recordSandboxCall(sql, p.workspaceId);
    }
    const err = await refusal(p);
    expect(err?.code).to.equal('daily_quota_exceeded');
    expect(err?.message).to.match(/^Daily quota reached/);
  });
});
