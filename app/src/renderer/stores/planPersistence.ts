/**
 * The Plan screen's inputs and last loaded profile, remembered in browser storage across
 * reloads, and the mixed cluster's card kinds. What is read back is checked (zod for the inputs, parseCostProfile for the
 * profile): a stale or hand-edited value falls back to the defaults instead of breaking the
 * screen. A profile larger than MAX_PROFILE_CHARS is not kept (it is loaded, not remembered).
 */
import { z } from 'zod';
import { parseCostProfile, type CostProfile } from '@afd/shared';
import { defaultPlanInputs, type PlanInputs } from '../plan/planLogic.js';
import { defaultMixedInputs, type MixedInputs } from '../plan/mixedLogic.js';
import { STORAGE_PREFIX, type KeyValueStorage } from '../lib/persist.js';

const INPUTS_KEY = `${STORAGE_PREFIX}planInputs`;
const PROFILE_KEY = `${STORAGE_PREFIX}planProfile`;
const MIXED_KEY = `${STORAGE_PREFIX}planMixed`;
export const MAX_PROFILE_CHARS = 1_000_000;

// Numbers as typed (NaN, an empty field, is stored as null); planJob checks their ranges.
const num = z.number().nullable().transform((v) => (v === null ? NaN : v));
const inputsSchema = z.object({ gpus: num, tpotMs: num, context: num, maxBatch: num, stages: z.string(), link: z.string(), gpuMemGib: num.optional() });
// A row's card and numbers as typed (mixedJob checks them); at most 64 kinds, as no screen shows more.
const mixedSchema = z.object({ rows: z.array(z.object({ card: z.string(), gpus: num, price: num, costs: z.enum(['roofline', 'profile']) })).max(64), model: z.string() });
const profileSchema = z.object({ source: z.string(), text: z.string() });

const warn = (what: string, e: unknown): void => console.warn(`plan ${what} not remembered: ${(e as Error).message}`);

export function loadPlanInputs(storage: KeyValueStorage | null): PlanInputs {
  try {
    const r = inputsSchema.safeParse(JSON.parse(storage?.getItem(INPUTS_KEY) ?? 'null'));
    return r.success ? { ...defaultPlanInputs, ...r.data, gpuMemGib: r.data.gpuMemGib ?? NaN } : { ...defaultPlanInputs };
  } catch {
    return { ...defaultPlanInputs };
  }
}

export function savePlanInputs(storage: KeyValueStorage | null, inputs: PlanInputs): void {
  try {
    // JSON writes NaN as null.
    storage?.setItem(INPUTS_KEY, JSON.stringify(inputs));
  } catch (e) {
    warn('inputs', e);
  }
}

/** The profile last loaded, parsed again; null when none was kept or it no longer parses. */
export function loadPlanProfile(storage: KeyValueStorage | null): { source: string; profile: CostProfile } | null {
  try {
    const r = profileSchema.safeParse(JSON.parse(storage?.getItem(PROFILE_KEY) ?? 'null'));
    return r.success ? { source: r.data.source, profile: parseCostProfile(r.data.text, r.data.source) } : null;
  } catch {
    return null;
  }
}

export function savePlanProfile(storage: KeyValueStorage | null, source: string, text: string): void {
  try {
    if (text.length > MAX_PROFILE_CHARS) storage?.removeItem(PROFILE_KEY);
    else storage?.setItem(PROFILE_KEY, JSON.stringify({ source, text }));
  } catch (e) {
    warn('profile', e);
  }
}

/** The mixed cluster's rows and model; the defaults (no rows) when none were kept or they do not check. */
export function loadPlanMixed(storage: KeyValueStorage | null): MixedInputs {
  try {
    const r = mixedSchema.safeParse(JSON.parse(storage?.getItem(MIXED_KEY) ?? 'null'));
    return r.success ? r.data : { ...defaultMixedInputs, rows: [] };
  } catch {
    return { ...defaultMixedInputs, rows: [] };
  }
}

export function savePlanMixed(storage: KeyValueStorage | null, mixed: MixedInputs): void {
  try {
    // JSON writes NaN (an empty GPUs or price field) as null.
    storage?.setItem(MIXED_KEY, JSON.stringify(mixed));
  } catch (e) {
    warn('mixed cluster', e);
  }
}
