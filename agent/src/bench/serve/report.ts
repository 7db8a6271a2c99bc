/**
 * The human-readable result table of `afd-bench serve` (same layout as vllm bench serve),
 * with the prefix cache's hits when the server reports them, and for the multi-turn dataset
 * its turn-1 vs turns >= 2 section.
 */
import type { Summary } from './stats.js';
import type { ServeBenchResult } from './runServeBench.js';
import type { MultiTurnStats, TurnGroupStats } from './turnStats.js';

const WIDTH = 50;

function row(label: string, value: string | number): string {
  const v = typeof value === 'number' ? (Number.isInteger(value) ? String(value) : value.toFixed(2)) : value;
  return `${label.padEnd(40)}${v.padStart(WIDTH - 40)}`;
}

function title(text: string, fill: string): string {
  const pad = Math.max(0, WIDTH - text.length - 2);
  return `${fill.repeat(Math.floor(pad / 2))} ${text} ${fill.repeat(Math.ceil(pad / 2))}`;
}

function latency(name: string, short: string, s: Summary): string[] {
  return [
    title(name, '-'),
    row(`Mean ${short} (ms):`, s.mean),
    row(`Median ${short} (ms):`, s.median),
    ...Object.entries(s.percentiles).map(([k, v]) => row(`P${k.slice(1)} ${short} (ms):`, v)),
  ];
}

const ratio = (r: number | null): string => (r === null ? 'not reported' : r.toFixed(3));

function turnGroup(name: string, g: TurnGroupStats): string[] {
  return [
    title(name, '-'),
    row('Successful requests:', g.requests),
    row('Prompt tokens:', g.promptTokens),
    row('Cached prompt tokens:', g.cachedTokens ?? 'not reported'),
    row('Cache hit ratio (cached/prompt):', ratio(g.hitRatio)),
    row('Requests with cache hits:', g.requestsWithHits ?? 'not reported'),
    row('Mean TTFT (ms):', g.ttftMs.mean),
    row('Median TTFT (ms):', g.ttftMs.median),
    ...Object.entries(g.ttftMs.percentiles).map(([k, v]) => row(`P${k.slice(1)} TTFT (ms):`, v)),
  ];
}

function multiTurn(m: MultiTurnStats): string[] {
  return [
    title('Multi-turn (shared system prompt)', '-'),
    row('Conversations completed / total:', `${m.completedConversations}/${m.numConversations}`),
    row('Turns per conversation:', m.turns),
    row('Shared system prompt (tokens):', m.sharedPrefixLen),
    row('User message / max output (tokens):', `${m.turnInputLen}/${m.turnOutputLen}`),
    row('Lengths checked with /tokenize:', m.lengthsChecked ? 'yes' : 'no'),
    ...(m.turnsNotSent > 0 ? [row('Turns not sent (conversation failed):', m.turnsNotSent)] : []),
    ...turnGroup('Turn 1 (cold: only the system prompt hits)', m.firstTurn),
    ...turnGroup('Turns >= 2 (the history hits)', m.laterTurns),
    title('Per turn: mean TTFT (ms) / hit ratio', '-'),
    ...m.perTurn.map((t) => row(`Turn ${t.turn}:`, `${t.ttftMs.mean.toFixed(2)} / ${ratio(t.hitRatio)}`)),
  ];
}

export function formatServeReport(r: ServeBenchResult): string {
  return [
    title('Serving Benchmark Result', '='),
    ...(r.datasetName !== 'random' ? [row('Dataset:', r.datasetName)] : []),
    row('Successful requests:', r.completed),
    row('Failed requests:', r.failed),
    row('Maximum request concurrency:', r.maxConcurrency ?? 'unlimited'),
    row('Request rate configured (RPS):', r.requestRate === 'inf' ? 'inf' : r.requestRate),
    ...(Object.keys(r.extraBody).length > 0 ? [row('Extra request body:', JSON.stringify(r.extraBody))] : []),
    row('Benchmark duration (s):', r.durationS),
    row('Total input tokens:', r.totalInputTokens),
    row('Total generated tokens:', r.totalOutputTokens),
    ...(r.totalCachedTokens !== null ? [row('Total cached prompt tokens:', r.totalCachedTokens), row('Prefix cache hit ratio (cached/input):', ratio(r.cacheHitRatio))] : []),
    row('Request throughput (req/s):', r.requestThroughput),
    row('Output token throughput (tok/s):', r.outputThroughput),
    row('Total Token throughput (tok/s):', r.totalTokenThroughput),
    ...latency('Time to First Token', 'TTFT', r.ttftMs),
    ...latency('Time per Output Token (excl. 1st token)', 'TPOT', r.tpotMs),
    ...latency('Inter-token Latency', 'ITL', r.itlMs),
    ...latency('End-to-end Latency', 'E2EL', r.e2elMs),
    ...(r.multiTurn ? multiTurn(r.multiTurn) : []),
    '='.repeat(WIDTH),
    ...(r.errors.length ? ['Errors:', ...r.errors.map((e) => `  ${e}`)] : []),
  ].join('\n');
}
