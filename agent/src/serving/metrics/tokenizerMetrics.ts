/**
 * `afd:tokenizer_*` metrics of a rank whose prompts are tokenised in worker threads: how many
 * wait, and how each task ended (a flood of over-long prompts shows as too_long, clients
 * that left before their prompt was tokenised as cancelled), and how often the long pieces
 * of prompts were found in the workers' caches.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { EncoderStats } from '../tokenizer/PromptEncoder.js';

export function registerTokenizerMetrics(registry: Registry, stats: () => EncoderStats): void {
  new Gauge({
    name: 'afd:tokenizer_tasks_waiting',
    help: 'Prompts waiting for a tokenizer worker thread.',
    registers: [registry],
    collect() {
      this.set(stats().waiting);
    },
  });
  let seenPieces = { hits: 0, misses: 0 };
  new Counter({
    name: 'afd:tokenizer_piece_cache_total',
    help: "Long prompt pieces (a chat's history, a shared system prompt) the tokenizer workers found in their caches (hit) or tokenised (miss).",
    labelNames: ['result'],
    registers: [registry],
    collect() {
      const now = stats().pieceCache;
      this.inc({ result: 'hit' }, Math.max(0, now.hits - seenPieces.hits));
      this.inc({ result: 'miss' }, Math.max(0, now.misses - seenPieces.misses));
      seenPieces = now;
    },
  });
  const seen: Partial<Record<string, number>> = {};
  new Counter({
    name: 'afd:tokenizer_tasks_total',
    help: 'Tokenizer worker tasks ended, by outcome: done, too_long (stopped once past the context window), cancelled (the client left), failed.',
    labelNames: ['outcome'],
    registers: [registry],
    collect() {
      for (const [outcome, value] of Object.entries(stats().outcomes)) {
        this.inc({ outcome }, value - (seen[outcome] ?? 0));
        seen[outcome] = value;
      }
    },
  });
}
