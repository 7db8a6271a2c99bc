/** Test helper: the token ids a request handle streams, in order; its error event is thrown. */
import type { RequestHandle } from '../ServingEngine.js';

export async function tokenIdsOf(h: RequestHandle): Promise<number[]> {
  const out: number[] = [];
  for await (const e of h.events) {
    if (e.type === 'delta') out.push(...e.tokenIds);
    if (e.type === 'error') throw e.error;
  }
  return out;
}
