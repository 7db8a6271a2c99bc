/** The human-readable result table of `afd-bench serve` (same layout as vllm bench serve). */
import type { Summary } from './stats.js';
import type { ServeBenchResult } from './runServeBench.js';

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

export function formatServeReport(r: ServeBenchResult): string {
  return [
    title('Serving Benchmark Result', '='),
    row('Successful requests:', r.completed),
    row('Failed requests:', r.failed),
    row('Maximum request concurrency:', r.maxConcurrency ?? 'unlimited'),
    row('Request rate configured (RPS):', r.requestRate === 'inf' ? 'inf' : r.requestRate),
    ...(Object.keys(r.extraBody).length > 0 ? [row('Extra request body:', JSON.stringify(r.extraBody))] : []),
    row('Benchmark duration (s):', r.durationS),
    row('Total input tokens:', r.totalInputTokens),
    row('Total generated tokens:', r.totalOutputTokens),
    row('Request throughput (req/s):', r.requestThroughput),
    row('Output token throughput (tok/s):', r.outputThroughput),
    row('Total Token throughput (tok/s):', r.totalTokenThroughput),
    ...latency('Time to First Token', 'TTFT', r.ttftMs),
    ...latency('Time per Output Token (excl. 1st token)', 'TPOT', r.tpotMs),
    ...latency('Inter-token Latency', 'ITL', r.itlMs),
    ...latency('End-to-end Latency', 'E2EL', r.e2elMs),
    '='.repeat(WIDTH),
    ...(r.errors.length ? ['Errors:', ...r.errors.map((e) => `  ${e}`)] : []),
  ].join('\n');
}
