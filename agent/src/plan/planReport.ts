/** The plan as a table for a terminal and as JSON: predicted figures, the reason, and where every figure comes from. */
import { describeRow, type CostProfile, type PlanQuery, type PlanResult } from '@afd/shared';

export interface PlanReport {
  query: PlanQuery & { model: string; link: string };
  /** What the link figures are (published preset or measured connector). */
  linkSource: string;
  profile: Pick<CostProfile, 'backend' | 'device' | 'driver' | 'commit' | 'measuredAt' | 'threads' | 'host'> & { model: string };
  useAfd: boolean;
  reason: string;
  rows: PlanResult['rows'];
}

export function planReport(result: PlanResult, query: PlanReport['query'], profile: CostProfile, linkSource: string): PlanReport {
  const { backend, device, driver, commit, measuredAt, threads, host } = profile;
  return { query, linkSource, profile: { backend, device, driver, commit, measuredAt, threads, ...(host ? { host } : {}), model: profile.model.name }, useAfd: result.useAfd, reason: result.reason, rows: result.rows };
}

const pad = (cells: string[], widths: number[]): string => cells.map((c, i) => (i <= 1 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');

export function formatPlanTable(r: PlanReport, top: number): string {
  const head = ['#', 'serve as', 'GPUs used', 'batch/rank', 'TPOT ms', 'tok/s', 'tok/s/GPU', 'FFN busy'];
  const body = r.rows.slice(0, top).map((row, i) => [
    `${i + 1}`,
    describeRow(row),
    `${row.gpusUsed}/${r.query.gpus}`,
    `${row.batchPerRank}`,
    row.tpotMs.toFixed(2),
    row.tokensPerS.toFixed(0),
    row.tokensPerSPerGpu.toFixed(1),
    row.kind === 'afd' ? `${Math.round(row.ffnBusy * 100)}%` : '-',
  ]);
  const widths = head.map((h, c) => Math.max(h.length, ...body.map((b) => b[c]!.length)));
  const p = r.profile;
  return [
    `plan: ${r.query.gpus} GPUs, TPOT <= ${r.query.tpotMs} ms, context ${r.query.context}, model ${r.query.model}`,
    `profile: ${p.model} on ${p.backend} ${p.device} (${p.driver}${p.backend === 'cpu' ? `, ${p.threads} thread(s) per rank` : ''}${p.host ? `; host ${p.host.cpus} CPUs, load ${p.host.loadAverage1m.toFixed(1)}` : ''}), commit ${p.commit}, ${p.measuredAt}`,
    `link: ${r.query.link}: ${r.linkSource}`,
    '',
    pad(head, widths),
    ...body.map((b) => pad(b, widths)),
    ...(r.rows.length > top ? [`... ${r.rows.length - top} more (--top)`] : []),
    '',
    r.reason,
    'predicted by the step simulator from the measured curves; memory capacity (weights + KV) is not modelled yet',
  ].join('\n');
}
