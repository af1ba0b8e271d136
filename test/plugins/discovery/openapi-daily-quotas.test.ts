import { expect } from 'chai';
import { client } from '../../support/http';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';

/** Each operation with a daily quota, the setting its 429 names, and whether it also has the per-minute rate limit. */
const QUOTAS: Array<[method: string, path: string, setting: string, rateLimited: boolean]> = [
  ['post', '/api/compute/price', 'SANDBOX_COMPUTE_CALLS_PER_DAY', true],
  ['post', '/api/price-router', 'SANDBOX_COMPUTE_CALLS_PER_DAY', true],
  ['post', '/api/price-router/verify', 'SANDBOX_COMPUTE_CALLS_PER_DAY', true],
  ['post', '/api/functions/{id}/test', 'FUNCTION_TEST_RUNS_PER_DAY', true],
  ['post', '/api/agents/register', 'REGISTRATIONS_PER_ADDRESS_PER_DAY', false],
  ['post', '/api/oauth/register', 'REGISTRATIONS_PER_DAY', false],
  ['post', '/api/auth/signup', 'SIGNUPS_PER_ADDRESS_PER_DAY', true],
  ['post', '/api/auth/wallet/signin', 'SIGNUPS_PER_DAY', true],
  ['post', '/api/api-keys/rotate', 'SANDBOX_KEY_ROTATIONS_PER_DAY', true],
  ['post', '/api/data/observations', 'OBSERVATIONS_PER_WORKSPACE_PER_DAY', true],
];

describe('OpenAPI: the 429 of every operation with a daily quota', function () {
  this.timeout(60_000);
  let svc: TestService;
  let doc: Record<string, any>;
  before(async () => {
    svc = await startTestService();
    doc = (await client(svc.url).get<Record<string, any>>('/api/openapi.json?format=json')).body;
  });
  after(() => svc.close());

  /** A response as declared: inline, or a refusal shared in components.responses. */
  const resolved = (r: Record<string, any>): Record<string, any> => (r.$ref ? doc.components.responses[(r.$ref as string).replace('#/components/responses/', '')] : r);

  it('names daily_quota_exceeded and its setting beside the per-minute rate limit, with the Error body and Retry-After', () => {
    for (const [method, path, setting, rateLimited] of QUOTAS) {
      const op = doc.paths[path]?.[method];
      expect(op, `${method} ${path}`).to.be.an('object');
      const declared = resolved(op.responses['429'] ?? {});
      expect(declared.description, `${method} ${path}`).to.be.a('string').and.match(/daily_quota_exceeded/).and.include(setting).and.match(/00:00 UTC/);
      if (rateLimited) {
        expect(declared.description, `${method} ${path}`).to.match(/^rate_limited/);
        expect(declared.headers, `${method} ${path}`).to.include.keys('X-RateLimit-Limit');
      } else expect(declared.description, `${method} ${path}`).not.to.match(/rate_limited/);
      expect(declared.headers, `${method} ${path}`).to.include.keys('Retry-After');
      expect(declared.content['application/json'].schema.$ref, `${method} ${path}`).to.equal('#/components/schemas/Error');
    }
  });

  it("tells a sandbox's compute that the 429 lists next steps, which the Error body carries", () => {
    expect(resolved(doc.paths['/api/compute/price'].post.responses['429']).description).to.match(/next lists the steps/).and.match(/claim/);
    expect(doc.components.schemas.Error.properties).to.include.keys('next', 'retry_after', 'limit');
  });
});
