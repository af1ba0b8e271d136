import { expect } from 'chai';
import { ApiError } from '../../../core/errors';
import { EngineError } from '../../../engine';
import { toApiError } from '../../../plugins/pricing/services/engine-errors';

describe('pricing: engine outcomes as SPEC error bodies', () => {
  it('functions_failed behind open breakers carries retry_after (sent as Retry-After) and a hint with the wait', () => {
    const err = toApiError(new EngineError('functions_failed', 'Every function that could answer has its circuit breaker open after recent failures; the first lets a trial call through in 7 s.', { attempts: [], retryAfterS: 7 }));
    expect(err).to.be.instanceOf(ApiError);
    const api = err as ApiError;
    expect(api.status).to.equal(502);
    expect(api.extras.retry_after).to.equal(7);
    expect(api.extras.hint).to.equal('Nothing was charged. Retry after 7 s, or add a fallback_chain or fallback_function to your routing policy.');
  });

  it('every candidate excluded, one only by an open breaker, is the retryable 502 with retry_after and each candidate; no_eligible_function never carries a wait', () => {
    const breakerOpen = [{ function: 'f', id: 'fn_f', kept: false, reason: 'breaker open' }] as never;
    const withBreaker = toApiError(new EngineError('functions_failed', 'No candidate function can run under strategy cheapest now: f has its circuit breaker open after recent failures. The first lets a trial call through in 4 s.', { candidates: breakerOpen, attempts: [], strategy: 'cheapest', policyId: 'rp_1', retryAfterS: 4 })) as ApiError;
    expect(withBreaker.status).to.equal(502);
    expect(withBreaker.extras.retry_after).to.equal(4);
    expect(withBreaker.extras.fields).to.deep.include({ retryable: true, strategy: 'cheapest', policy_id: 'rp_1', candidates: breakerOpen, attempts: [] });
    expect(withBreaker.extras.hint).to.equal(
      'Nothing was charged. Every candidate was excluded, and an open circuit breaker is all that keeps out one that would run (candidates lists each one and why): retry after 4 s, when the first lets a trial call through, or PATCH /api/routing-policies/rp_1: add candidates; or set a fallback_function: the fallbacks are tried when every candidate is excluded.',
    );
    const without = toApiError(new EngineError('no_eligible_function', 'No candidate function is eligible under strategy cheapest.', { candidates: [], strategy: 'cheapest' })) as ApiError;
    expect(without.extras).to.not.have.property('retry_after');
    expect(without.extras.hint).to.match(/Choose another routing_preference, or pin a function with function_id\.$/);
    // Under a saved policy, the hint names the PATCH that loosens it, and the answer names the policy.
    const saved = toApiError(new EngineError('no_eligible_function', 'No candidate function is eligible under strategy cheapest.', { candidates: [], strategy: 'cheapest', policyId: 'rp_1' })) as ApiError;
    expect(saved.extras.hint).to.match(/PATCH \/api\/routing-policies\/rp_1: add candidates; or set a fallback_function: the fallbacks are tried when every candidate is excluded\.$/);
    expect(saved.extras.fields).to.include({ policy_id: 'rp_1' });
  });

  it('no_eligible_function names the levers for the reasons given, and once the fallbacks could not run either, lists them under attempts', () => {
    const candidate = (reason: string) => ({ function: `f-${reason}`, id: null, kept: false, reason }) as never;
    const err = (reasons: string[], attempts?: unknown[]) =>
      toApiError(new EngineError('no_eligible_function', 'No candidate function is eligible under strategy priority.', { candidates: reasons.map(candidate), strategy: 'priority', policyId: 'rp_2', ...(attempts ? { attempts: attempts as never } : {}) })) as ApiError;
    expect(err(['unreachable', 'not active']).extras.hint).to.equal(
      'Every candidate was excluded; candidates lists each one and why. PATCH /api/routing-policies/rp_2: replace the functions out of reach or not active (a marketplace function its owner withdrew, say); or set a fallback_function: the fallbacks are tried when every candidate is excluded.',
    );
    // A pipeline function is within reach and active: the hint names it as what it is, not as one out of reach or not active.
    expect(err(['pipeline unavailable']).extras.hint).to.equal(
      'Every candidate was excluded; candidates lists each one and why. PATCH /api/routing-policies/rp_2: replace the pipeline functions, which cannot run yet (pipeline execution is not available), with external_api or built-in ones; or set a fallback_function: the fallbacks are tried when every candidate is excluded.',
    );
    expect(err(['cost ceiling', 'latency ceiling', 'rule miss', 'no weight']).extras.hint).to.contain('PATCH /api/routing-policies/rp_2: raise max_cost_per_unit, raise max_latency_ms, add a rule or a default_function for this context, give the functions a weight;');
    // A rule that matched sends the context to its function: adding a rule or a default_function would not help, so neither is offered.
    const matched = toApiError(
      new EngineError('no_eligible_function', 'Rule 0 matched, but its function qa-slow is not eligible (latency ceiling); default_function applies only when no rule matches.', {
        candidates: [candidate('latency ceiling'), candidate('rule miss')],
        strategy: 'policy',
        policyId: 'rp_3',
        ruleMatched: true,
      }),
    ) as ApiError;
    expect(matched.extras.hint).to.contain('PATCH /api/routing-policies/rp_3: raise max_latency_ms;').and.not.contain('add a rule');
    // A candidate over both ceilings names both levers.
    const both = toApiError(
      new EngineError('no_eligible_function', 'No candidate function is eligible under strategy cheapest.', {
        candidates: [{ function: 'slow-and-dear', id: null, kept: false, reason: 'cost ceiling', detail: '0.0005 > 0.0004', also: [{ reason: 'latency ceiling', detail: 'p50 124 ms > 50 ms' }] }],
        strategy: 'cheapest',
        policyId: 'rp_4',
      }),
    ) as ApiError;
    expect(both.extras.hint).to.contain('PATCH /api/routing-policies/rp_4: raise max_cost_per_unit, raise max_latency_ms;');
    // Ceilings alone: a fallback helps only within them, which the hint says. And where no lever applies, the config key
    // that names candidates is the strategy's own (priority reads order, weighted its weights, policy its rules).
    expect(both.extras.hint).to.match(/; or set a fallback_function within the ceilings \(fallbacks are held to them too\): the fallbacks are tried when every candidate is excluded\.$/);
    const byStrategy = (strategy: string) => (toApiError(new EngineError('no_eligible_function', `No candidate function is eligible under strategy ${strategy}.`, { candidates: [], strategy, policyId: 'rp_5' })) as ApiError).extras.hint as string;
    expect(byStrategy('priority')).to.contain('PATCH /api/routing-policies/rp_5: add functions to config.order;');
    expect(byStrategy('weighted')).to.contain('PATCH /api/routing-policies/rp_5: give more functions a weight in config.weights;');
    expect(byStrategy('policy')).to.contain('PATCH /api/routing-policies/rp_5: add a rule or a default_function');
    expect(byStrategy('round_robin')).to.contain('PATCH /api/routing-policies/rp_5: add candidates;');
    // Under a routing_preference the policy's own strategy still names the candidates; a matched rule is its own lever.
    const breakerOpen = [{ function: 'f', id: 'fn_f', kept: false, reason: 'breaker open' }] as never;
    const preferred = toApiError(new EngineError('no_eligible_function', 'No candidate function is eligible under strategy cheapest.', { candidates: breakerOpen, strategy: 'cheapest', policyStrategy: 'priority', policyId: 'rp_6' })) as ApiError;
    expect(preferred.extras.hint).to.contain('PATCH /api/routing-policies/rp_6: add functions to config.order;');
    const ruled = toApiError(new EngineError('no_eligible_function', 'Rule 0 matched, but its function f is not eligible (breaker open).', { candidates: breakerOpen, strategy: 'policy', policyStrategy: 'policy', policyId: 'rp_7', ruleMatched: true })) as ApiError;
    expect(ruled.extras.hint).to.contain('PATCH /api/routing-policies/rp_7: point the matched rule at another function;');
    const skipped = [{ function: 'cost-plus', id: 'fn_builtin_cost_plus', role: 'fallback_function', outcome: 'skipped', error: 'cost ceiling (0.001 > 0)', ms: 0 }];
    const after = err(['cost ceiling'], skipped);
    expect(after.extras.hint).to.equal("Every candidate was excluded; candidates lists each one and why, attempts why each of the policy's fallbacks could not run. PATCH /api/routing-policies/rp_2: raise max_cost_per_unit.");
    expect(after.extras.fields).to.deep.include({ attempts: skipped });
    // Only a fallback chain, every entry skipped: the policy has no fallback_function yet, which is still a lever.
    const chainOnly = err(['cost ceiling'], [{ ...skipped[0], role: 'fallback_chain' }]);
    expect(chainOnly.extras.hint).to.equal(
      "Every candidate was excluded; candidates lists each one and why, attempts why each of the policy's fallbacks could not run. PATCH /api/routing-policies/rp_2: raise max_cost_per_unit; or set a fallback_function within the ceilings (fallbacks are held to them too).",
    );
  });

  it('functions_failed after real failures has no retry_after', () => {
    const api = toApiError(new EngineError('functions_failed', 'Every function tried failed (chosen function, fallback chain, fallback function).', { attempts: [] })) as ApiError;
    expect(api.extras).to.not.have.property('retry_after');
    expect(api.extras.hint).to.equal('Nothing was charged. Retry later, or add a fallback_chain or fallback_function to your routing policy.');
  });

  it('functions_failed whose other attempts could not price the context says so: more inputs would let them price', () => {
    const attempts = [
      { function: 'cost-plus', id: 'fn_builtin_cost_plus', role: 'fallback_function', outcome: 'not_applicable', error: 'needs unit_cost', ms: 0.1 },
      { function: 'acme.pricer', id: 'fn_1', role: 'chosen', outcome: 'failed', error: 'ENOTFOUND', ms: 3 },
    ];
    const api = toApiError(new EngineError('functions_failed', 'Every function tried failed (chosen function, fallback function).', { attempts: attempts as never }), { hasPolicy: true }) as ApiError;
    expect(api.extras.hint).to.equal(
      "Nothing was charged. Retry later, or add another function to your routing policy's fallbacks: those it names failed or were skipped too (see attempts). The others tried could not price this context as given; their errors in attempts name the inputs they need.",
    );
  });

  it('functions_failed speaks of a routing policy only to a workspace that has one: one without is told to create it, a sandbox and the demo to pin another built-in', () => {
    const failed = () => new EngineError('functions_failed', 'Every function tried failed (chosen function).', { attempts: [] });
    expect((toApiError(failed(), { hasPolicy: false }) as ApiError).extras.hint).to.equal(
      'Nothing was charged. Retry later, or create a default routing policy with a fallback (POST /api/routing-policies {"name": "with a fallback", "strategy": "default", "is_default": true, "fallback_function": "anchored-adjustment"}, a built-in that can price this context).',
    );
    expect((toApiError(failed(), { hasPolicy: true }) as ApiError).extras.hint).to.equal('Nothing was charged. Retry later, or add a fallback_chain or fallback_function to your routing policy.');
    expect((toApiError(failed(), { sandbox: true, hasPolicy: false }) as ApiError).extras.hint).to.equal('Nothing was charged. Retry later, or pin another built-in with function_id.');
    expect((toApiError(failed(), { keyless: true }) as ApiError).extras.hint).to.equal('Nothing was charged. Retry later, or pin another built-in with function_id.');
    const permanent = new EngineError('functions_failed', 'Every function tried failed at an address the service will not call.', { attempts: [], permanent: true, refusedAt: ['fn_x'], pinned: false });
    expect((toApiError(permanent, { hasPolicy: false }) as ApiError).extras.hint).to.match(/; meanwhile create a default routing policy with a fallback \(POST \/api\/routing-policies .*\), or pin another function with function_id\.$/);
  });

  it('functions_failed suggests as a fallback a built-in that can price the context sent and did not just fail, and none when no built-in can', () => {
    const failed = (attempts: Array<{ function: string; id: string }> = []) =>
      new EngineError('functions_failed', 'Every function tried failed.', { attempts: attempts.map((a) => ({ ...a, role: 'chosen' as const, outcome: 'failed' as const, error: 'boom', ms: 1 })) });
    const hint = (err: EngineError, context: Record<string, unknown>) => (toApiError(err, { hasPolicy: false, context }) as ApiError).extras.hint as string;
    expect(hint(failed(), { unit_cost: 4 })).to.include('"fallback_function": "cost-plus"}');
    expect(hint(failed([{ function: 'anchored-adjustment', id: 'fn_builtin_anchored' }]), { current_price: 3 })).to.include('"fallback_function": "charm-pricing"}');
    expect(hint(failed(), { product_type: 'nothing-known' })).to.include('create a default routing policy whose fallback_function can price this context (POST /api/routing-policies with "name"');
    // Nor one its breaker kept out of this call: its calls kept failing.
    const behindBreaker = new EngineError('functions_failed', 'Every function tried failed.', {
      attempts: [
        { function: 'x', id: 'fn_x', role: 'chosen' as const, outcome: 'failed' as const, error: 'boom', ms: 1 },
        { function: 'cost-plus', id: 'fn_builtin_cost_plus', role: 'alternate' as const, outcome: 'skipped' as const, error: 'breaker open', ms: 0 },
      ],
    });
    expect(hint(behindBreaker, { unit_cost: 4 })).to.not.include('"fallback_function": "cost-plus"');
  });

  it('functions_failed asks a credential that may not change routing policies to ask an owner or admin, instead of pointing at a change it would be refused', () => {
    const failed = () => new EngineError('functions_failed', 'Every function tried failed.', { attempts: [] });
    expect((toApiError(failed(), { hasPolicy: true, policyAccess: 'ask_manager' }) as ApiError).extras.hint).to.equal(
      'Nothing was charged. Retry later, or ask an owner or admin of the workspace to add a fallback_chain or fallback_function to its routing policy (this credential may not change it).',
    );
    expect((toApiError(failed(), { hasPolicy: false, policyAccess: 'ask_manager' }) as ApiError).extras.hint).to.equal(
      'Nothing was charged. Retry later, or ask an owner or admin of the workspace for a default routing policy with a fallback (this credential may not create one).',
    );
    const ranFallbacks = new EngineError('functions_failed', 'Every function tried failed.', { attempts: [{ function: 'b', id: 'fn_b', role: 'fallback_chain' as const, outcome: 'failed' as const, error: 'boom', ms: 1 }] });
    expect((toApiError(ranFallbacks, { hasPolicy: true, policyAccess: 'ask_manager' }) as ApiError).extras.hint).to.match(/^Nothing was charged\. Retry later, or ask an owner or admin of the workspace to add another function to its routing policy's fallbacks/);
  });

  it("functions_failed tells an owner's narrowed credential which credential may change routing policies, not to ask an owner", () => {
    const failed = () => new EngineError('functions_failed', 'Every function tried failed.', { attempts: [] });
    const withPolicy = (toApiError(failed(), { hasPolicy: true, policyAccess: 'needs_full_access' }) as ApiError).extras.hint as string;
    expect(withPolicy).to.equal(
      'Nothing was charged. Retry later, or add a fallback_chain or fallback_function to your routing policy with a credential of full access (your session, or a key created with no scopes; this one was narrowed by its scopes).',
    );
    const without = (toApiError(failed(), { hasPolicy: false, policyAccess: 'needs_full_access' }) as ApiError).extras.hint as string;
    expect(without).to.include('create a default routing policy with a fallback with a credential of full access').and.not.include('ask an owner');
    const ranFallbacks = new EngineError('functions_failed', 'Every function tried failed.', { attempts: [{ function: 'b', id: 'fn_b', role: 'fallback_chain' as const, outcome: 'failed' as const, error: 'boom', ms: 1 }] });
    expect((toApiError(ranFallbacks, { hasPolicy: true, policyAccess: 'needs_full_access' }) as ApiError).extras.hint).to.match(
      /^Nothing was charged\. Retry later, or add another function to your routing policy's fallbacks with a credential of full access \(your session, or a key created with no scopes\)/,
    );
  });

  it('functions_failed where the policy\'s fallbacks ran (or were skipped) too does not ask for a fallback_chain it has', () => {
    const attempts = [
      { function: 'a', id: 'fn_a', role: 'chosen' as const, outcome: 'failed' as const, error: 'boom', ms: 1 },
      { function: 'b', id: 'fn_b', role: 'fallback_chain' as const, outcome: 'skipped' as const, error: 'latency ceiling (p50 900 ms > 100 ms)', ms: 0 },
    ];
    const api = toApiError(new EngineError('functions_failed', 'Every function tried failed.', { attempts })) as ApiError;
    expect(api.extras.hint).to.equal("Nothing was charged. Retry later, or add another function to your routing policy's fallbacks: those it names failed or were skipped too (see attempts).");
  });
});
