/** The plan as a table for a terminal and as JSON: predicted figures, the reason, and where every figure comes from. */
import { describeRow, formatGib, type CostProfile, type MemoryModel, type PlanQuery, type PlanResult } from '@afd/shared';

export interface PlanReport {
  query: Omit<PlanQuery, 'memory'> & { model: string; link: string };
  /** What the link figures are (published preset or measured connector). */
  linkSource: string;
  profile: Pick<CostProfile, 'backend' | 'device' | 'driver' | 'commit' | 'measuredAt' | 'threads' | 'host'> & { model: string };
  /** Memory capacity as modelled: bytes of one GPU and what was derived or assumed; null: not modelled (why in notes). */
  memory: { deviceBytes: number | null; notes: string[] };
  useAfd: boolean;
  reason: string;
  rows: PlanResult['rows'];
  /** Shapes that do not fit one GPU's memory at batch 1, and why. */
  dropped: PlanResult['dropped'];
}

export function planReport(result: PlanResult, query: PlanReport['query'], profile: CostProfile, linkSource: string, memory: MemoryModel | null = null): PlanReport {
  const { backend, device, driver, commit, measuredAt, threads, host } = profile;
  return {
    query,
    linkSource,
    profile: { backend, device, driver, commit, measuredAt, threads, ...(host ? { host } : {}), model: profile.model.name },
    memory: memory
      ? { deviceBytes: memory.deviceBytes, notes: memory.notes }
      : { deviceBytes: null, notes: ['memory capacity not modelled: the profile has no device memory; pass --gpu-mem-gib'] },
    useAfd: result.useAfd,
    reason: result.reason,
    rows: result.rows,
    dropped: result.dropped,
  };
}

const pad = (cells: string[], widths: number[]): string => cells.map((c, i) => (i <= 1 || i === cells.length - 1 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ').trimEnd();

function deviceLine(q: PlanReport['query']): string[] {
  const d = q.device;
  if (!d) return [];
  return [d.kind === 'cpu' ? `shared device: the ${q.gpus} ranks are engine threads on ${d.cores} cores` : `shared device: MPS, attention ${Math.round(d.attentionShare * 100)}% / FFN ${Math.round(d.ffnShare * 100)}% of the SMs, xAyF on x GPUs`];
}

/** Shapes dropped for the same reason share a line: "  1A1F x4, 2A1F x2: FFN rank: 52 GiB of weights do not fit 40 GiB". */
function droppedLines(dropped: PlanReport['dropped']): string[] {
  const byReason = new Map<string, string[]>();
  for (const d of dropped) byReason.set(d.reason, [...(byReason.get(d.reason) ?? []), d.topology]);
  return [...byReason].map(([reason, shapes]) => `  ${shapes.join(', ')}: ${reason}`);
}

export function formatPlanTable(r: PlanReport, top: number): string {
  const shown = r.rows.slice(0, top);
  // Notes shared by rows print once below the table, referenced by number.
  const notes = [...new Set(shown.flatMap((row) => row.notes))];
  const head = ['#', 'serve as', 'GPUs used', 'batch/rank', 'TPOT ms', 'tok/s', 'tok/s/GPU', 'FFN busy', 'GiB/GPU', 'notes'];
  const body = shown.map((row, i) => [
    `${i + 1}`,
    describeRow(row),
    `${row.gpusUsed}/${r.query.gpus}`,
    `${row.batchPerRank}`,
    row.tpotMs.toFixed(2),
    row.tokensPerS.toFixed(0),
    row.tokensPerSPerGpu.toFixed(1),
    row.kind === 'colocated' ? '-' : `${Math.round(row.ffnBusy * 100)}%`,
    row.memoryBytesPerGpu === undefined ? '-' : (row.memoryBytesPerGpu / 1024 ** 3).toFixed(1),
    row.notes.map((n) => `[${notes.indexOf(n) + 1}]`).join(''),
  ]);
  const widths = head.map((h, c) => Math.max(h.length, ...body.map((b) => b[c]!.length)));
  const p = r.profile;
  const memory = r.memory.deviceBytes === null ? r.memory.notes : [`memory: ${formatGib(r.memory.deviceBytes)} per GPU, weights + KV bound the batch`, ...r.memory.notes.map((n) => `  ${n}`)];
  return [
    `plan: ${r.query.gpus} GPUs, TPOT <= ${r.query.tpotMs} ms, context ${r.query.context}, model ${r.query.model}`,
    `profile: ${p.model} on ${p.backend} ${p.device} (${p.driver}${p.backend === 'cpu' ? `, ${p.threads} thread(s) per rank` : ''}${p.host ? `; host ${p.host.cpus} CPUs, load ${p.host.loadAverage1m.toFixed(1)}` : ''}), commit ${p.commit}, ${p.measuredAt}`,
    `link: ${r.query.link}: ${r.linkSource}`,
    ...deviceLine(r.query),
    ...memory,
    '',
    pad(head, widths),
    ...body.map((b) => pad(b, widths)),
    ...(r.rows.length > top ? [`... ${r.rows.length - top} more (--top)`] : []),
    ...notes.map((n, i) => `[${i + 1}] ${n}`),
    ...(r.dropped.length ? ['', 'dropped for memory:', ...droppedLines(r.dropped)] : []),
    '',
    r.reason,
    'predicted by the step simulator from the measured curves',
  ].join('\n');
}
