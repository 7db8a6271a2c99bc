/**
 * The Plan screen's mixed cluster, pure: rows of (card kind, GPUs, price per GPU, where its
 * costs come from) checked into a job for heteroSearch, and the job run. The rules are the
 * CLI's (`afd-agent plan --gpus h200:8,h100:16 --price ... --profile card=file`, through
 * shared/src/plan/heteroPools.ts): a kind with a measured profile uses it (the profile must
 * be of the model), one without is priced by the roofline of its published figures; prices
 * are given for every kind or none; the link is a preset (kinds share no measured connector).
 */
import { cardPools, findLinkPreset, LINK_PRESETS, MODEL_CONFIGS, presetShape, searchHetero, unpricedCards, type CardKind, type CardDescription, type CostProfile, type HeteroQuery, type HeteroResult } from '@afd/shared';
import { checkSearchFields, type PlanInputs } from './planLogic.js';

/** One card kind as typed. */
export interface MixedRow {
  card: string;
  gpus: number;
  /** Price of one GPU; NaN: none given. */
  price: number;
  /** 'profile': the profile loaded on the screen (a file or an agent's); 'roofline': the card's published figures. */
  costs: 'roofline' | 'profile';
}

export interface MixedInputs {
  rows: MixedRow[];
  /** The model the roofline is of (arch/shape, e.g. qwen3_moe/qwen3-30b-a3b); a measured profile must be of it too. */
  model: string;
}

/** The shapes a roofline can be computed for, as arch/shape (the CLI's --model takes the same). */
export const MODEL_CHOICES: readonly string[] = Object.entries(MODEL_CONFIGS).map(([name, c]) => `${String(c.model_type)}/${name}`);

export const defaultMixedInputs: MixedInputs = { rows: [], model: MODEL_CHOICES[0]! };

/** A new row: the first card of the table not yet named, 2 GPUs, no price, the roofline. */
export function newMixedRow(rows: readonly MixedRow[], cards: readonly string[]): MixedRow {
  return { card: cards.find((c) => !rows.some((r) => r.card.trim().toLowerCase() === c)) ?? '', gpus: 2, price: NaN, costs: 'roofline' };
}

/** A mixed cluster is planned when more than one kind is given (one kind is the GPUs field's plan). */
export const isMixed = (m: MixedInputs): boolean => m.rows.length > 1;

/** What the worker is given: plain data (the pools' cost functions are built there). */
export interface MixedJob {
  kinds: CardKind[];
  model: string;
  link: string;
  query: HeteroQuery;
}

/** A mixed job's answer: the ranking and each kind as the CLI's report describes it. */
export interface MixedResult extends HeteroResult {
  cards: CardDescription[];
  linkSource: string;
}

/** Checks the rows (and the shared fields: TPOT, context, batch, micro-batches, link) into a job, or the first problem. */
export function mixedJob(m: MixedInputs, i: PlanInputs, profile: { source: string; profile: CostProfile } | null): { ok: true; job: MixedJob } | { ok: false; error: string } {
  const seen = new Set<string>();
  const kinds: CardKind[] = [];
  for (const [n, row] of m.rows.entries()) {
    const card = row.card.trim().toLowerCase();
    const at = `Card kind ${n + 1}`;
    if (!/^[a-z0-9_-]+$/.test(card)) return { ok: false, error: `${at}: name a card (h200, h100, ...) in letters, digits, - or _` };
    if (seen.has(card)) return { ok: false, error: `${at}: ${card} is named twice` };
    seen.add(card);
    if (!Number.isInteger(row.gpus) || row.gpus < 1 || row.gpus > 4096) return { ok: false, error: `${at} (${card}): GPUs must be a whole number from 1 to 4096` };
    if (!Number.isNaN(row.price) && !(row.price > 0 && Number.isFinite(row.price))) return { ok: false, error: `${at} (${card}): the price must be a number above 0, or empty` };
    if (row.costs === 'profile' && !profile) return { ok: false, error: `${at} (${card}): costs from the profile, but none is loaded: open one, or price it by the roofline` };
    kinds.push({ card, gpus: row.gpus, ...(Number.isNaN(row.price) ? {} : { price: row.price }), ...(row.costs === 'profile' && profile ? { measured: profile } : {}) });
  }
  const missing = unpricedCards(kinds);
  if (missing.length > 0) return { ok: false, error: `Prices: give every card kind a price, or none (missing: ${missing.join(', ')})` };
  if (!m.model.trim()) return { ok: false, error: 'Model: name the model (arch/shape, e.g. qwen3_moe/qwen3-30b-a3b)' };
  if (!LINK_PRESETS.some((l) => l.name === i.link)) return { ok: false, error: `Link: a mixed cluster needs a link preset (${LINK_PRESETS.map((l) => l.name).join(', ')}): cards of different kinds share no measured connector` };
  const fields = checkSearchFields(i);
  if (!fields.ok) return fields;
  return { ok: true, job: { kinds, model: m.model.trim(), link: i.link, query: { tpotMs: i.tpotMs, context: i.context, maxBatch: i.maxBatch, stageCounts: fields.stageCounts } } };
}

/** Runs heteroSearch on a job (in the worker, or inline); an unknown card or model, or a profile of another model, throws the CLI's sentence. */
export function runMixedJob(job: MixedJob): MixedResult {
  const link = findLinkPreset(job.link);
  const { pools, cards } = cardPools(job.kinds, { model: job.model, shape: () => presetShape(job.model), link, context: job.query.context });
  return { ...searchHetero(pools, job.query), cards, linkSource: link.source };
}
