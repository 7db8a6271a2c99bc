/**
 * Test helper: the setup the AFD integration tests share (agent/src/afd/*.int.test.ts): a
 * temporary AFD home with a make-model tiny checkpoint in it and, given prompts, the
 * colocated rank's greedy completions of them, the reference every topology must equal.
 * Registers the beforeAll that makes them and the afterAll that kills every role a test
 * left running and removes the home.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { makeModel } from '../model/makeModel.js';
import { colocatedCompletions } from './rankHttp.js';
import { killAllRoles } from './RoleProcess.js';

export interface TinyModelSetupOptions {
  /** Prefix of the temporary home's name (says which test left it, should one remain). */
  homePrefix: string;
  /** make-model architecture; the `tiny` preset, seed 0. */
  arch: string;
  /** Prompts (token ids) whose colocated greedy completions of maxTokens make the reference; none: no reference. */
  reference?: { prompts: number[][]; maxTokens: number };
  /** Budget of the beforeAll (making the model and the reference run). */
  timeoutMs?: number;
}

export interface TinyModelSetup {
  /** The temporary AFD home of every rank. */
  readonly home: string;
  /** The checkpoint's directory, `tiny-<arch>` inside the home. */
  readonly model: string;
  /** The colocated greedy completions of the prompts, one per prompt; set by the beforeAll. */
  reference: string[];
}

export function useTinyModelSetup(o: TinyModelSetupOptions): TinyModelSetup {
  const home = mkdtempSync(join(tmpdir(), o.homePrefix));
  const setup: TinyModelSetup = { home, model: join(home, `tiny-${o.arch.replaceAll('_', '-')}`), reference: [] };
  beforeAll(async () => {
    await makeModel({ arch: o.arch, preset: 'tiny', outDir: setup.model, seed: 0, force: true, configOnly: false });
    if (o.reference) setup.reference = await colocatedCompletions(setup.model, home, o.reference.prompts, o.reference.maxTokens);
  }, o.timeoutMs ?? 180_000);
  afterAll(async () => {
    await killAllRoles();
    rmSync(home, { recursive: true, force: true });
  });
  return setup;
}
