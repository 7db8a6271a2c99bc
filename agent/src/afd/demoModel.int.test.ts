/**
 * The demo model (models/afd-demo-moe) as real role processes on the CPU backend: greedy
 * answers to chat prompts through 1A1F and 2A2F equal the colocated ones token for token.
 * Skipped while the checkpoint is not in the checkout.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveTopology } from '@afd/shared';
import { freePortBlock } from '@afd/native/ports';
import { findDemoModelDir } from '../model/demoModel.js';
import { TextTokenizer } from '../serving/tokenizer/TextTokenizer.js';
import { colocatedCompletions, complete } from '../testing/rankHttp.js';
import { killAllRoles, startTopology, stopTopology } from '../testing/RoleProcess.js';

const model = findDemoModelDir();
const home = mkdtempSync(join(tmpdir(), 'afd-demo-int-'));
const questions = ['What is a lighthouse?', 'What does benevolent mean?', 'What is the opposite of happy?'];
const maxTokens = 24;
let prompts: number[][] = [];
let reference: string[] = [];

afterAll(async () => {
  await killAllRoles();
  rmSync(home, { recursive: true, force: true });
});

describe.runIf(model !== null)('the demo model through AFD', () => {
  beforeAll(async () => {
    const tokenizer = await TextTokenizer.fromDir(model!);
    prompts = questions.map((q) => tokenizer.encodeChat([{ role: 'user', content: q }], { addGenerationPrompt: true }));
    reference = await colocatedCompletions(model!, home, prompts, maxTokens);
  }, 180_000);

  it.each(['1A1F', '2A2F'])('%s gives the colocated greedy tokens', { timeout: 240_000 }, async (topology) => {
    const afdPort = await freePortBlock(resolveTopology(topology).ffn.ranks);
    const { attn, ffn, attnUrls: urls } = await startTopology({ topology, afdPort, model: model!, home, config: { stepDeadlineMs: 20_000 } });
    for (const [i, p] of prompts.entries()) {
      expect((await complete(urls[i % urls.length]!, p, maxTokens)).text, questions[i]).toBe(reference[i]);
    }
    await stopTopology(attn, ffn); // afterAll kills what a failure leaves running
  });
});

if (model === null) {
  describe('the demo model through AFD', () => {
    it.skip('skipped: no demo model in this checkout (models/afd-demo-moe; see tools/demo-model/NOTES.md)', () => undefined);
  });
}
