/**
 * The fixture of the engine's logprobs and penalties tests: one tiny model and a CPU
 * engine for it, a 9-token prompt that each sequence of a batch prefills into its own KV
 * blocks (sequence i owns blocks 3i..3i+2, so up to 10 sequences share the 31 blocks),
 * and the raw logits of the prompt's last token (a plan without extras, returnLogits).
 */
import { rm } from 'node:fs/promises';
import { buildStepPlan, type PlanSeq } from '@afd/shared';
import { Engine, type EngineLoadOptions } from '../engine.js';
import { writeTinyModel } from './engineTesting.js';

export const fixturePrompt = [3, 17, 5, 9, 1, 30, 12, 7, 22];
export const fixtureOptions = { threads: 2, kvBlockSize: 4, numKvBlocks: 31 };

/** Sequence i of a batch: the whole prompt (or `tokenIds` from `numCached`) in its own blocks. */
export function fixtureSeq(i: number, extra: Partial<PlanSeq> = {}): PlanSeq {
  return { tokenIds: fixturePrompt, numCached: 0, blockTable: [3 * i, 3 * i + 1, 3 * i + 2], ...extra };
}

export interface LogprobsFixture {
  dir: string;
  engine: Engine;
  /** Raw logits of the prompt's last token. */
  raw: Float32Array;
  /** Another engine of the same model (e.g. a role split); closed with the fixture. */
  load(options: EngineLoadOptions): Promise<Engine>;
  close(): Promise<void>;
}

export async function logprobsFixture(arch = 'qwen3_moe', seed = 21): Promise<LogprobsFixture> {
  const dir = await writeTinyModel(arch, seed);
  const engines: Engine[] = [];
  const load = async (options: EngineLoadOptions): Promise<Engine> => {
    const e = await Engine.load(dir, { ...fixtureOptions, ...options });
    engines.push(e);
    return e;
  };
  const engine = await load({});
  const raw = (await engine.step(buildStepPlan([fixtureSeq(0)], { returnLogits: true }))).logits!;
  return {
    dir,
    engine,
    raw,
    load,
    close: async () => {
      engines.forEach((e) => e.close());
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Token ids sorted by raw logit, most likely first (lower id on ties). */
export function byLogit(raw: Float32Array): number[] {
  return Array.from(raw.keys()).sort((a, b) => raw[b]! - raw[a]! || a - b);
}
