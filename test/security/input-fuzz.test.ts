import { expect } from 'chai';
import fc from 'fast-check';
import { keysDeclaredAt } from '../../core/validation';
import type { RouteSpec } from '../../core/http/route';
import { call } from '../support/http';
import type { HttpResult } from '../support/http';
import { applyMutation, bodyMutations, hostileSegment, queryMutations } from '../support/fuzz';
import { credentialHeaders } from '../support/security';
import type { PreparedRequest } from '../support/security';
import { startTestService } from '../support/service';
import type { TestService } from '../support/service';
import { buildWorld } from '../support/world';
import type { World } from '../support/world';
import { securityCases } from './cases';
import { publicFuzzCases } from './cases-public';
import type { FuzzCase } from './cases-public';

/**
 * Property tests over the route table (safety conventions B9.5 and B9.6): every route's valid
 * request, mutated by fast-check into what careless and hostile clients send, is answered without
 * a server error; a body or query the route's own schema refuses is refused with 400 before any
 * work; every refusal has the shape its protocol promises. The runs are seeded, so a failure
 * reproduces; fast-check prints the smallest request it found. FUZZ_RUNS, FUZZ_SEED change the
 * run; FUZZ_TALLY=1 prints, per route, how many requests each oracle and status had.
 */
const SEED = Number(process.env.FUZZ_SEED ?? 20261127);
const RUNS = Number(process.env.FUZZ_RUNS ?? 24);

type Oracle = 'refused' | 'allowed';

interface Sent {
  what: string;
  oracle: Oracle;
  res: HttpResult<Record<string, unknown>>;
}

describe('input fuzzing over the route table', function () {
  this.timeout(300_000);
  let svc: TestService;
  let world: World;
  const specs = new Map<string, RouteSpec>();
  const cases: Record<string, FuzzCase> = { ...securityCases, ...publicFuzzCases };

  before(async () => {
    svc = await startTestService({
      config: {
        limits: {
          registrations: { perAddressPerDay: 100_000, overallPerDay: 1_000_000 },
          sandbox: { keyRotationsPerDay: 100_000, computeCallsPerDay: 1_000_000 },
          demo: { callsPerHour: 1_000_000 },
          rateLimit: { perWorkspacePerMinute: 10_000_000, perAddressPerMinute: 10_000_000, failedAuthPerAddressPer15Min: 10_000_000 },
        },
      },
    });
    for (const { spec } of svc.routes.all()) specs.set(spec.id, spec);
    world = await buildWorld(svc);
  });
  after(() => {
    if (process.env.FUZZ_TALLY) for (const [id, t] of tally) console.log(id, JSON.stringify(Object.fromEntries(t)));
    return svc?.close();
  });

  const fuzzable = (spec: RouteSpec) => !!spec.body || !!spec.query || !!spec.rawBody || spec.path.includes(':');

  it('has a request to start from for every route that takes a body, a query or a path parameter', () => {
    const missing = [...specs.values()].filter((s) => fuzzable(s) && !cases[s.id]).map((s) => `${s.method.toUpperCase()} ${s.path} (${s.id})`);
    expect(missing, `routes without a fuzz case:\n${missing.join('\n')}`).to.deep.equal([]);
  });

  /** A request of the route that succeeds, with the credential it needs; the world is rebuilt when an earlier route's fuzzing disabled what it uses. */
  async function validRequest(id: string): Promise<{ req: PreparedRequest; headers: Record<string, string> }> {
    const c = cases[id] as FuzzCase;
    for (let attempt = 0; ; attempt++) {
      const headersOf = (req: PreparedRequest) => req.headers ?? (c.as ? credentialHeaders(world, c.as) : {});
      const req = await c.request(world, svc);
      const control = await send(id, req.path, req.body, headersOf(req));
      const fine = control.status < 400 || (c.okStatuses ?? []).includes(control.status);
      // The control may have used up what it was given (a claim token, a rotated key): the fuzz gets a fresh one.
      if (fine) {
        const fresh = await c.request(world, svc);
        return { req: fresh, headers: headersOf(fresh) };
      }
      if (attempt > 0 || ![401, 403].includes(control.status)) throw new Error(`${id}: the unchanged request was refused: ${control.status} ${control.text}`);
      world = await buildWorld(svc);
    }
  }

  async function send(id: string, path: string, body: unknown, headers: Record<string, string>): Promise<HttpResult<Record<string, unknown>>> {
    const spec = specs.get(id) as RouteSpec;
    return call(svc.url, spec.method.toUpperCase(), path, { ...(body !== undefined ? { body } : {}), headers });
  }

  const tally = new Map<string, Map<string, number>>();
  function check(spec: RouteSpec, s: Sent): void {
    const { res } = s;
    const t = tally.get(spec.id) ?? new Map<string, number>();
    tally.set(spec.id, t);
    const k = `${s.oracle}:${res.status}`;
    t.set(k, (t.get(k) ?? 0) + 1);
    const declared = Object.keys(spec.responses ?? {}).map(Number);
    const where = `${spec.method.toUpperCase()} ${spec.path} with ${s.what}: ${res.status} ${res.text.slice(0, 400)}`;
    expect(res.status < 500 || declared.includes(res.status), `server error for ${where}`).to.equal(true);
    if (spec.id === 'mcp.post' && res.body?.jsonrpc === '2.0') expect(mcpFailureCode(res.body), `an MCP answer that is a server error: ${where}`).not.to.be.oneOf([-32603, 'internal_error']);
    if (s.oracle === 'refused') expect(res.status, `the schema refuses it, the service did not: ${where}`).to.be.within(400, 499);
    if (res.status >= 400 && res.status < 500) {
      expect(res.headers.get('content-type') ?? '', where).to.match(/^application\/json/);
      const body = res.body ?? {};
      if (spec.id.startsWith('oauth.')) expect(body.error, `OAuth error shape: ${where}`).to.be.a('string');
      else if (spec.id.startsWith('mcp.') && body.jsonrpc === '2.0') expect((body.error as { code?: unknown } | undefined)?.code, `JSON-RPC error shape: ${where}`).to.be.a('number');
      else {
        expect(body.error, `common error shape (error): ${where}`).to.be.a('string');
        expect(body.code, `common error shape (code): ${where}`).to.be.a('string');
      }
      if (s.oracle === 'refused' && res.status === 400 && body.code === 'validation_error') {
        const issues = body.issues as Array<{ path?: unknown; message?: unknown }> | undefined;
        expect(issues, `a validation_error lists its issues: ${where}`).to.be.an('array').that.is.not.empty;
        for (const i of issues ?? []) expect(i.path, where).to.be.a('string');
      }
    }
  }

  /** JSON-RPC's internal error, or the code a failed tool result carries in its text. */
  function mcpFailureCode(body: Record<string, unknown>): unknown {
    const error = body.error as { code?: unknown } | undefined;
    if (error) return error.code;
    const result = body.result as { isError?: boolean; content?: Array<{ text?: string }> } | undefined;
    if (!result?.isError) return undefined;
    try {
      return (JSON.parse(result.content?.[0]?.text ?? '{}') as { code?: unknown }).code;
    } catch {
      return undefined;
    }
  }

  function splitPath(path: string): { pathname: string; query: Record<string, string> } {
    const [pathname, search] = path.split('?') as [string, string | undefined];
    return { pathname, query: Object.fromEntries(new URLSearchParams(search ?? '')) };
  }

  /** A route without a query schema ignores its query; one with a schema refuses names it does not declare. */
  function queryOracle(spec: RouteSpec, query: Record<string, string>): Oracle {
    if (!spec.query) return 'allowed';
    const known = keysDeclaredAt(spec.query, []);
    if (known && Object.keys(query).some((k) => !known.includes(k))) return 'refused';
    return spec.query.safeParse(query).success ? 'allowed' : 'refused';
  }

  /** Lone surrogates (which encodeURIComponent throws on) become U+FFFD, as a browser would send them. */
  function encodeSegment(s: string): string {
    return encodeURIComponent(s.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd'));
  }

  for (const id of Object.keys({ ...securityCases, ...publicFuzzCases }).sort()) {
    it(`route ${id}: mutated bodies, queries and path parameters are answered without a server error, and what its schemas refuse is refused`, async function () {
      const spec = specs.get(id);
      if (!spec) this.skip();
      const s = spec;
      const { req, headers } = await validRequest(id);
      const { pathname, query } = splitPath(req.path);
      const qs = (q: Record<string, string>) => (Object.keys(q).length ? `?${new URLSearchParams(q).toString()}` : '');

      if ((s.body || s.rawBody) && req.body !== undefined) {
        await fc.assert(
          fc.asyncProperty(bodyMutations(req.body), async (m) => {
            const body = applyMutation(req.body, m);
            // A route reading its raw body (OAuth's form or JSON, MCP's JSON-RPC) has no schema to refuse by: it must only not fail.
            const oracle: Oracle = !s.body || s.body.safeParse(body).success ? 'allowed' : 'refused';
            check(s, { what: `body ${JSON.stringify(body)?.slice(0, 300)}`, oracle, res: await send(id, req.path, body, headers) });
          }),
          { seed: SEED, numRuns: RUNS },
        );
      }
      if (s.query || Object.keys(query).length > 0 || s.method === 'get') {
        await fc.assert(
          fc.asyncProperty(queryMutations(query, s.query ? (keysDeclaredAt(s.query, []) ?? []) : []), async (q) => {
            check(s, { what: `query ${JSON.stringify(q).slice(0, 300)}`, oracle: queryOracle(s, q), res: await send(id, pathname + qs(q), req.body, headers) });
          }),
          { seed: SEED, numRuns: Math.ceil(RUNS / 2) },
        );
      }
      const params = s.path.split('/').filter((seg) => seg.startsWith(':'));
      if (params.length > 0) {
        const real = pathname.split('/');
        const template = s.path.split('/');
        await fc.assert(
          fc.asyncProperty(fc.constantFrom(...params), hostileSegment, async (param, value) => {
            const path = template.map((seg, i) => (seg === param ? encodeSegment(value) : real[i])).join('/') + qs(query);
            check(s, { what: `${param} = ${JSON.stringify(value).slice(0, 100)}`, oracle: 'allowed', res: await send(id, path, req.body, headers) });
          }),
          { seed: SEED, numRuns: Math.ceil(RUNS / 2) },
        );
      }
    });
  }
});
