/**
 * `afd-agent plan --gpus h200:8,h100:16 [--price h200=X,h100=Y] [--profile h200=file ...]`:
 * a cluster of several card kinds. Each kind's costs come from a measured profile
 * (--profile card=file, repeated) or, when none is given for it, from the roofline of the
 * card's published figures (shared/src/plan/cards.ts, roofline.ts), labelled as such.
 */
import { readFileSync } from 'node:fs';
import { cardPools, findLinkPreset, formatGib, modelFromConfig, parseCostProfile, presetShape, searchHetero, describeHeteroRow, unpricedCards, type CardDescription, type HeteroResult, type ModelShape } from '@afd/shared';
import { intFlag } from '../util/intFlag.js';

export interface HeteroFlags {
  gpus: string;
  tpotMs: string;
  model: string;
  /** card=file, once per measured card kind (a single value or a list when repeated). */
  profile?: string | string[];
  price?: string;
  link: string;
  context: string;
  maxBatch: string;
  stages: string;
  top: string;
}

export interface HeteroReport {
  query: { gpus: string; tpotMs: number; context: number; maxBatch: number; stageCounts: number[]; model: string; link: string };
  linkSource: string;
  /** Per card kind: how many, its price, where its costs come from, its memory per GPU. */
  cards: CardDescription[];
  useAfd: boolean;
  reason: string;
  rows: HeteroResult['rows'];
  bestByPrice: HeteroResult['bestByPrice'];
}

/** True when --gpus names card kinds (h200:8,...) rather than a plain count. */
export const isHeteroGpus = (gpus: string): boolean => !/^\s*\d+\s*$/.test(gpus);

/** `card:n,card:n` as [card, n] pairs (lower case); bad syntax is an error that shows the form. A card outside the table needs --profile. */
export function parseGpuKinds(text: string): { card: string; gpus: number }[] {
  const parts = text.split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (parts.length === 0) throw new Error(`--gpus: expected a count (8) or card kinds (h200:8,h100:16), got "${text}"`);
  const seen = new Set<string>();
  return parts.map((part) => {
    const m = /^([A-Za-z0-9_-]+):(\d+)$/.exec(part);
    if (!m) throw new Error(`--gpus: "${part}" is not card:count (e.g. h200:8,h100:16)`);
    const card = m[1]!.toLowerCase();
    if (seen.has(card)) throw new Error(`--gpus: ${card} is named twice`);
    seen.add(card);
    return { card, gpus: intFlag(`--gpus ${card}`, m[2]!, 1, 4096) };
  });
}

/** `card=number,...` (or card=file for --profile) as a map; each key must be a card of --gpus. */
function parseAssignments(flag: string, items: string[], cards: string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const item of items.flatMap((s) => s.split(',')).map((s) => s.trim()).filter((s) => s !== '')) {
    const m = /^([^=]+)=(.+)$/.exec(item);
    if (!m) throw new Error(`${flag}: "${item}" is not card=${flag === '--price' ? 'price' : 'file'} (e.g. ${flag === '--price' ? 'h200=3.5,h100=2.2' : 'h200=h200.json'})`);
    const card = m[1]!.trim().toLowerCase();
    if (!cards.includes(card)) throw new Error(`${flag}: ${card} is not among --gpus (${cards.join(', ')})`);
    out.set(card, m[2]!.trim());
  }
  return out;
}

export function parsePrices(text: string | undefined, cards: string[]): Map<string, number> {
  const raw = parseAssignments('--price', text ? [text] : [], cards);
  const prices = new Map<string, number>();
  for (const [card, v] of raw) {
    const n = Number(v);
    if (!Number.isFinite(n) || n <= 0) throw new Error(`--price: ${card}=${v} is not a positive number`);
    prices.set(card, n);
  }
  const missing = unpricedCards(cards.map((card) => ({ card, price: prices.get(card) })));
  if (missing.length > 0) throw new Error(`--price: give every card of --gpus a price (missing: ${missing.join(', ')})`);
  return prices;
}

/** The model's shapes for a roofline: a config.json path, or a known shape (the part after arch/). */
export function modelShapeFor(model: string): ModelShape {
  if (model.endsWith('.json')) return modelFromConfig(JSON.parse(readFileSync(model, 'utf8')) as Record<string, unknown>, { name: model });
  return presetShape(model);
}

export function runHeteroPlan(flags: HeteroFlags): HeteroReport {
  const kinds = parseGpuKinds(flags.gpus);
  const cards = kinds.map((k) => k.card);
  const prices = parsePrices(flags.price, cards);
  const files = parseAssignments('--profile', [flags.profile ?? []].flat(), cards);
  const tpotMs = Number(flags.tpotMs);
  if (!Number.isFinite(tpotMs) || tpotMs <= 0) throw new Error(`--tpot-ms must be a positive number of milliseconds, got "${flags.tpotMs}"`);
  if (flags.link === 'profile') throw new Error('--gpus with card kinds needs --link with a preset (nvlink4, ib400, ...): cards of different kinds share no measured connector');
  const link = findLinkPreset(flags.link);
  const context = intFlag('--context', flags.context, 1);
  // The pricing rules live in shared (cardPools), so the console's Plan screen prices a kind the same way.
  const given = kinds.map(({ card, gpus }) => {
    const file = files.get(card);
    const price = prices.get(card);
    return { card, gpus, ...(price !== undefined ? { price } : {}), ...(file ? { measured: { profile: parseCostProfile(readFileSync(file, 'utf8'), file), source: file } } : {}) };
  });
  const { pools, cards: described } = cardPools(given, { model: flags.model, shape: () => modelShapeFor(flags.model), link, context, names: { profile: (card, file) => `--profile ${card}=${file}`, model: '--model' } });
  const query = { gpus: flags.gpus, tpotMs, context, maxBatch: intFlag('--max-batch', flags.maxBatch, 1, 65536), stageCounts: flags.stages.split(',').map((s) => intFlag('--stages', s.trim(), 1, 64)), model: flags.model, link: flags.link };
  const r = searchHetero(pools, query);
  return { query, linkSource: link.source, cards: described, useAfd: r.useAfd, reason: r.reason, rows: r.rows, bestByPrice: r.bestByPrice };
}

export function formatHeteroTable(r: HeteroReport, top: number): string {
  const priced = r.cards.every((c) => c.price !== null);
  const head = ['#', 'serve as', 'batch/rank', 'TPOT ms', 'tok/s', 'tok/s/GPU', ...(priced ? ['tok/s/price'] : [])];
  const body = r.rows.slice(0, top).map((row, i) => [`${i + 1}`, describeHeteroRow(row), `${row.batchPerRank}`, row.tpotMs.toFixed(2), row.tokensPerS.toFixed(0), row.tokensPerSPerGpu.toFixed(1), ...(priced ? [(row.tokensPerSPerPrice ?? 0).toFixed(1)] : [])]);
  const widths = head.map((h, c) => Math.max(h.length, ...body.map((b) => b[c]!.length)));
  const pad = (cells: string[]) => cells.map((c, i) => (i <= 1 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [
    `plan: ${r.query.gpus}, TPOT <= ${r.query.tpotMs} ms, context ${r.query.context}, model ${r.query.model}`,
    ...r.cards.map((c) => `${c.card}: ${c.gpus} x ${c.label}${c.price !== null ? `, price ${c.price}` : ''}, ${c.memoryBytes !== null ? `${formatGib(c.memoryBytes)} per GPU` : 'memory not modelled'}; costs: ${c.costs}`),
    `link: ${r.query.link}: ${r.linkSource}`,
    '',
    pad(head),
    ...body.map(pad),
    ...(r.rows.length > top ? [`... ${r.rows.length - top} more (--top)`] : []),
    '',
    r.reason,
    'predicted by the step simulator; tok/s/GPU counts every GPU of the cluster, tok/s/price only those in use; weights + KV per GPU bound the batch where a kind has its memory',
  ].join('\n');
}
