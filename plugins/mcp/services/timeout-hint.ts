/**
 * The hint of a tool call's timeout (JSON-RPC -32001), the endpoint's and the local pricing-mcp server's alike. A
 * priced call or a verification that may still finish is charged and counted once only when its retry carries the
 * same key, so compute_price's and verify_price's say so. Free of imports: bin/pricing-mcp.ts reads it without loading
 * the service.
 */
export function timeoutHint(tool: string | null): string {
  if (tool === 'compute_price') {
    return 'Retry once with the same params._meta.idempotency_key: a keyed call and its keyed retries are charged once (a call sent without a key may still finish and be charged beside its retry; key every call, a UUID say). Then wait a minute; work in progress may still finish and be counted.';
  }
  if (tool === 'verify_price') {
    return "Retry once with the same params._meta.idempotency_key: a keyed verification and its keyed retries are recorded and counted once against a sandbox's daily calls (one sent without a key may still finish and be counted beside its retry; key every call, a UUID say). Then wait a minute.";
  }
  return 'Retry once, then wait a minute; work in progress may still finish and be counted.';
}
