import { client } from './http';
import type { TestService } from './service';

/** pricing_compute_requests_total for one function and outcome, as scraped (0 before its first count). */
export async function computeCount(svc: TestService, fn: string, outcome: string): Promise<number> {
  const text = (await client(svc.url).get('/metrics')).text;
  const line = text.split('\n').find((l) => l.startsWith(`pricing_compute_requests_total{function="${fn}",outcome="${outcome}"}`));
  return line ? Number(line.split(' ').pop()) : 0;
}
