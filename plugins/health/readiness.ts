import type { ReadinessCheck } from '../../core/plugin';

export const READINESS_TIMEOUT_MS = 2000;

export interface CheckResult {
  status: 'up' | 'down';
  ms: number;
  error?: string;
}

export interface Readiness {
  checks: Record<string, CheckResult>;
  /** When the checks ran (ISO 8601): up to READINESS_CACHE_MS before the answer. */
  checkedAt: string;
}

async function runCheck(check: ReadinessCheck): Promise<CheckResult> {
  const start = performance.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      check(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${READINESS_TIMEOUT_MS} ms`)), READINESS_TIMEOUT_MS);
      }),
    ]);
    return { status: 'up', ms: Math.round(performance.now() - start) };
  } catch (err) {
    // /readyz is public: the driver's message stays, its internal addresses do not.
    const said = ((err as Error).message || String(err)).replace(/\[?[0-9a-f]*[:.][0-9a-f:.]+\]?:\d+|\b\d{1,3}(?:\.\d{1,3}){3}\b/gi, '<address>');
    return { status: 'down', ms: Math.round(performance.now() - start), error: said };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The readiness checks, run at most once per `maxAgeMs` and once at a time: /readyz is public and unlimited, and a
 * flood of it must not become a flood of database queries beside the compute traffic sharing the pool.
 */
export class ReadinessProbe {
  private last: { at: number; result: Readiness } | null = null;
  private running: Promise<Readiness> | null = null;

  constructor(
    private readonly checks: () => ReadonlyMap<string, ReadinessCheck>,
    private readonly maxAgeMs: number,
  ) {}

  read(): Promise<Readiness> {
    // Real time, not the service's clock (which tests may hold still): the reuse bounds load, not business time.
    if (this.last && performance.now() - this.last.at < this.maxAgeMs) return Promise.resolve(this.last.result);
    this.running ??= this.run().finally(() => (this.running = null));
    return this.running;
  }

  private async run(): Promise<Readiness> {
    const at = performance.now();
    const checkedAt = new Date().toISOString();
    const entries = [...this.checks()];
    const results = await Promise.all(entries.map(async ([name, check]) => [name, await runCheck(check)] as const));
    const result = { checks: Object.fromEntries(results), checkedAt };
    this.last = { at, result };
    return result;
  }
}
