/**
 * The card pools of a mixed cluster (heteroSearch.ts's input) from card kinds as a user
 * gives them: each kind's costs from a measured profile of the model when one is given for
 * it, else from the roofline of the card's published figures (cards.ts, roofline.ts),
 * labelled as such. One rule set for `afd-agent plan --gpus h200:8,h100:16` (files read by
 * the agent) and the console's Plan screen (profiles loaded on the page), so both price a
 * kind the same way and refuse the same inputs.
 */
import { CARDS, findCard } from './cards.js';
import { layerCosts } from './costs.js';
import type { CardPool } from './heteroSearch.js';
import type { LinkPreset } from './links.js';
import { memoryModel } from './memory.js';
import { modelPreset, type ModelShape } from './modelShape.js';
import type { CostProfile } from './profile.js';
import { rooflineProfile } from './roofline.js';

export interface CardKind {
  /** Lower case; a card outside cards.ts needs `measured`. */
  card: string;
  gpus: number;
  /** Price of one GPU of this kind; absent: not priced. */
  price?: number;
  /** A measured profile for this kind and where it came from (a file name); absent: the roofline. */
  measured?: { profile: CostProfile; source: string };
}

/** A kind as the reports print it: how many, its price, where its costs come from, its memory per GPU (null: not modelled). */
export interface CardDescription {
  card: string;
  label: string;
  gpus: number;
  price: number | null;
  costs: string;
  memoryBytes: number | null;
}

/** How errors name a measured profile and the model (the CLI names its flags). */
export interface PoolNames {
  profile(card: string, source: string): string;
  model: string;
}

const DEFAULT_NAMES: PoolNames = { profile: (card, source) => `the ${card} profile ${source}`, model: 'the model' };

/** A model's shapes from its name: a known shape (the part after arch/, as in qwen3_moe/qwen3-30b-a3b). */
export function presetShape(model: string): ModelShape {
  return { ...modelPreset(model.split('/').pop()!), name: model };
}

/** The cards of `kinds` left without a price when some are priced (tokens per price needs every kind's); [] when all or none are. */
export function unpricedCards(kinds: readonly Pick<CardKind, 'card' | 'price'>[]): string[] {
  const missing = kinds.filter((k) => k.price === undefined).map((k) => k.card);
  return missing.length === kinds.length ? [] : missing;
}

/**
 * Pools for heteroSearch over `link`, and each kind described. `shape` is asked only when
 * some kind has no measured profile (a model known only by its measured profiles needs none).
 */
export function cardPools(kinds: readonly CardKind[], o: { model: string; shape: () => ModelShape; link: LinkPreset; context: number; names?: PoolNames }): { pools: CardPool[]; cards: CardDescription[] } {
  const names = o.names ?? DEFAULT_NAMES;
  let shape: ModelShape | undefined;
  const pools: CardPool[] = [];
  const cards: CardDescription[] = [];
  for (const { card, gpus, price, measured } of kinds) {
    let profile: CostProfile;
    let costs: string;
    let label: string;
    if (measured) {
      profile = measured.profile;
      if (profile.model.name !== o.model) throw new Error(`${names.profile(card, measured.source)} was measured on ${profile.model.name}, not ${names.model} ${o.model}`);
      costs = `measured: ${measured.source} (${profile.device}, ${profile.measuredAt})`;
      label = CARDS.find((c) => c.name === card)?.label ?? profile.device;
    } else {
      const spec = findCard(card);
      label = spec.label;
      shape ??= o.shape();
      profile = rooflineProfile(spec, shape, { contexts: [o.context] });
      costs = `roofline from published figures (not measured): ${spec.source}`;
    }
    // Weights + KV per GPU bound each kind's batches where its profile carries memory.
    const memory = memoryModel(profile);
    pools.push({ card, gpus, ...(price !== undefined ? { pricePerGpu: price } : {}), costs: layerCosts(profile, o.link), memory });
    cards.push({ card, label, gpus, price: price ?? null, costs, memoryBytes: memory?.deviceBytes ?? null });
  }
  return { pools, cards };
}
