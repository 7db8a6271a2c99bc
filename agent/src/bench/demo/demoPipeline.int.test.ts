/**
 * What happens here after train.py ran on the GPU host, on a stand-in for its output (a
 * random-weight Qwen3-MoE with a tokenizer laid out as train.py writes it, and metrics in
 * its format) and a stand-in corpus in the format prepare_corpus.py writes (the real one,
 * 15 MB, is not committed): install-checkpoint.mjs installs it, `afd-bench demo-eval` (the
 * bundled program) scores the held-out documents and questions on the CPU engine, and
 * write-card.mjs fills the model card from the numbers.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { makeModel } from '../../model/makeModel.js';
import { bundleEntry, repoRoot, testAddonPath } from '../../testing/agentBundle.js';
import { defaultWordListPath } from './wordScore.js';
import { byteLevelTokenizerJson, demoTokenizerConfig } from '../../testing/demoModelTools.js';

const tmp = await mkdtemp(join(tmpdir(), 'afd-demo-pipeline-'));
afterAll(() => rm(tmp, { recursive: true, force: true }));
const node = (args: string[]) => spawnSync(process.execPath, args, { cwd: repoRoot, encoding: 'utf8', env: { ...process.env, AFD_NATIVE_ADDON: testAddonPath() }, maxBuffer: 64 << 20 });

/** A small corpus in prepare_corpus.py's format: meta, train and held-out records, 50 questions. */
function standInCorpus(): Buffer {
  const words = ['lighthouse', 'chair', 'ship', 'garden', 'violin', 'hammer', 'river', 'island', 'bridge', 'candle'];
  const records: object[] = [{ kind: 'meta', format: 1, seed: 1 }];
  for (let i = 0; i < 20; i++) records.push({ kind: 'text', split: 'train', id: `t${i}`, source: 'fortunes', text: `A fortune number ${i} says the day is bright.` });
  for (let i = 0; i < 8; i++) {
    const w = words[i % words.length]!;
    records.push({ kind: 'chat', split: 'test', id: `c${i}`, source: 'wordnet', messages: [{ role: 'user', content: `What is a ${w}?` }, { role: 'assistant', content: `A ${w} is a thing made of wood.` }] });
  }
  for (let i = 0; i < 6; i++) records.push({ kind: 'text', split: 'test', id: `p${i}`, source: 'bible-kjv', text: `And it came to pass on day ${i} that the light was good.` });
  for (let i = 0; i < 50; i++) {
    const w = i === 0 ? 'lighthouse' : `${words[i % words.length]!}${String.fromCharCode(97 + Math.floor(i / words.length))}`;
    records.push({ kind: 'qa', id: `qa:${w}`, split: 'qa', word: w, question: `What is a ${w}?`, reference: `a tower with a light that gives warning (${i})`, train_definition: 'a tall tower' });
  }
  return gzipSync(`${records.map((r) => JSON.stringify(r)).join('\n')}\n`);
}

describe.runIf(existsSync(defaultWordListPath))('demo model: install, evaluate, card', () => {
  it('runs on a stand-in checkpoint and fills every number of the card', { timeout: 600_000 }, async () => {
    const from = join(tmp, 'out');
    const model = join(from, 'model');
    await mkdir(model, { recursive: true });
    await makeModel({ arch: 'qwen3_moe', preset: 'tiny', outDir: model, seed: 5, force: true, overrides: { vocab_size: 260, bos_token_id: null, eos_token_id: [2, 0] } });
    const tok = demoTokenizerConfig();
    await writeFile(join(model, 'tokenizer.json'), JSON.stringify(byteLevelTokenizerJson(tok.pattern)));
    await writeFile(join(model, 'tokenizer_config.json'), JSON.stringify(tok.config));
    const sizes = { 'model.safetensors': (await stat(join(model, 'model.safetensors'))).size };
    const metrics = {
      model_name: 'afd-demo-moe', smoke: true, commit: 'abc1234', seed: 1234, command: ['python3', 'tools/demo-model/train.py', '--out', 'OUT'],
      versions: { python: '3.12.3', torch: '2.11.0', transformers: '5.17.0', tokenizers: '0.23.2', device: 'NVIDIA H200' },
      corpus: { train_tokens: 1000, chars_per_token: 4.1 },
      tokenizer: { vocab_size: 260, trained_on_chars: 2000 },
      model: { parameters: 123, compile: true, config: JSON.parse(await readFile(join(model, 'config.json'), 'utf8')) },
      training: { steps: 10, tokens: 5000, seconds: 1, tokens_per_second: 5000, epochs: 0.5, batch_size: 2, seq_len: 256, peak_lr: 0.002, weight_decay: 0.1, aux_loss_coef: 0.01, final_train_loss: 5 },
      export: { files: sizes, equivalence_rel_error: 1.7e-6 },
      heldout: { loss: 5.5, ppl: Math.exp(5.5), tokens: 1, docs: 12, doc_limit: 12, max_tokens: 256, ids_sha256: 'not-the-same' },
      golden: { format: 1, name: 'afd-demo-moe', cases: [] },
      reference_answers: [{ id: 'qa:lighthouse', question: 'What is a lighthouse?', promptIds: [1, 5], greedyIds: [7, 2], answer: 'x' }],
      reference_max_new_tokens: 16,
    };
    await writeFile(join(from, 'metrics.json'), JSON.stringify(metrics));

    const dest = join(tmp, 'installed');
    const inst = node(['tools/demo-model/install-checkpoint.mjs', from, '--dest', dest]);
    expect(inst.status, inst.stderr).toBe(0);
    for (const f of ['config.json', 'tokenizer.json', 'model.safetensors', 'training-metrics.json', 'golden.json', 'afd-model-info.json']) expect(existsSync(join(dest, f)), f).toBe(true);
    expect(JSON.parse(await readFile(join(dest, 'training-metrics.json'), 'utf8'))).not.toHaveProperty('golden');

    const bench = await bundleEntry('bench');
    const evalOut = join(dest, 'eval.json');
    const corpus = join(tmp, 'corpus.jsonl.gz');
    await writeFile(corpus, standInCorpus());
    const ev = node([bench, 'demo-eval', '--model', dest, '--corpus', corpus, '--out', evalOut, '--threads', '2', '--batch', '4', '--sample-repeats', '2']);
    expect(ev.status, ev.stderr).toBe(0);
    const report = JSON.parse(await readFile(evalOut, 'utf8'));
    expect(report.perplexity.ours.docs).toBe(12);
    expect(report.perplexity.ours.tokens).toBeGreaterThan(12);
    expect(report.perplexity.ours.ppl).toBeGreaterThan(1);
    expect(report.perplexity.sameTokenIds).toBe(false);
    expect(report.perplexity.agree).toBe(false);
    expect(report.questions.count).toBe(50);
    for (const mode of ['greedy', 'sampled']) {
      expect(report.questions[mode].answers).toHaveLength(50);
      expect(report.questions[mode].wordListShare).toBeGreaterThanOrEqual(0);
      expect(report.questions[mode].wordListShare).toBeLessThanOrEqual(1);
    }
    const spread = report.questions.sampledRepeats;
    expect(spread.seedSets).toBe(2);
    expect(spread.contentOverlapShares[0]).toBe(report.questions.sampled.contentOverlapShare); // the first set is the reported one
    expect(spread.meanContentOverlapShare).toBeCloseTo((spread.contentOverlapShares[0] + spread.contentOverlapShares[1]) / 2, 12);
    expect(report.questions.greedy.answers[0].question).toMatch(/^What is an? \w+\?$/);
    expect(report.questions.maxTokens).toBe(16);
    const qaIds = report.questions.greedy.answers.map((a: { id: string }) => a.id);
    expect(qaIds).toContain('qa:lighthouse');
    expect(report.questions.greedyVsTransformers).toMatchObject({ compared: 1, samePrompt: 0, sameTokens: 0, differing: ['qa:lighthouse'] });

    const card = node(['tools/demo-model/write-card.mjs', '--model', dest]);
    expect(card.status, card.stderr).toBe(0);
    const readme = await readFile(join(dest, 'README.md'), 'utf8');
    expect(readme).not.toContain('{{');
    expect(readme).toContain('# afd-demo-moe');
    expect(readme).toContain('| dict-gcide | 0.48.5+nmu2 |');
    expect(readme).toContain(report.perplexity.ours.ppl.toFixed(4));
    expect(readme).toContain('GNU General Public License, version 2');
    expect(readme).toContain('over 2 seed sets:');
  });
});
