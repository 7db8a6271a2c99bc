/**
 * `afd-bench demo-eval`: the demo model's numbers with our engine (CPU backend), for its
 * model card. Held-out perplexity against transformers' (train.py's metrics.json; they
 * must agree within 0.1% and score the same token ids), and the held-out "What is X?"
 * questions greedy and sampled at temperature 0.7: the share of answer words in the
 * wamerican list (target >= 90%) and of answers sharing a content word with the held-out
 * reference definition (target >= 60%). Greedy answers are also compared token for token
 * with transformers' greedy answers. One JSON report (stdout and --out).
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Command } from 'commander';
import { resolveRankConfig } from '@afd/shared';
import { Engine } from '@afd/native';
import { nativeEngineOpener } from '../role/nativeEngine.js';
import { ServingEngine } from '../serving/ServingEngine.js';
import { TextTokenizer } from '../serving/tokenizer/TextTokenizer.js';
import { intFlag } from '../util/intFlag.js';
import { gitCommit } from './cliArgs.js';
import { readCorpus, type ChatRecord, type TextRecord } from './demo/corpusFile.js';
import { heldoutMaxTokens, heldoutSequences, idsDigest, meanNll } from './demo/heldoutPerplexity.js';
import { compareGreedy } from './demo/greedyCompare.js';
import { answerQuestions, recitationCeiling, type ModeReport } from './demo/questionEval.js';
import { readTrainingMetrics } from './demo/trainingMetrics.js';
import { defaultWordListPath, readWordList } from './demo/wordScore.js';

interface DemoEvalFlags {
  model: string;
  corpus: string;
  metrics?: string;
  words: string;
  out?: string;
  threads: string;
  batch: string;
  skipPerplexity?: boolean;
  sampleRepeats: string;
}

/** Targets of issue 20. */
export const demoTargets = { perplexityRelDiff: 0.001, wordListShare: 0.9, contentOverlapShare: 0.6 } as const;

function docIds(tokenizer: TextTokenizer, r: ChatRecord | TextRecord): number[] {
  return r.kind === 'chat' ? tokenizer.encodeChat(r.messages, { addGenerationPrompt: false }) : tokenizer.encode(r.text, false);
}

/** The sampled figures of every seed set, and their means (one sample of 50 answers varies by several points). */
function sampledSpread(sets: ModeReport[]): { seedSets: number; contentOverlapShares: number[]; wordListShares: number[]; meanContentOverlapShare: number; meanWordListShare: number } {
  const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
  const overlap = sets.map((m) => m.contentOverlapShare);
  const wordShares = sets.map((m) => m.wordListShare);
  return { seedSets: sets.length, contentOverlapShares: overlap, wordListShares: wordShares, meanContentOverlapShare: mean(overlap), meanWordListShare: mean(wordShares) };
}

export function registerDemoEval(program: Command): void {
  program
    .command('demo-eval')
    .description("the demo model's held-out perplexity (vs transformers) and question answering, on the CPU engine; JSON report")
    .requiredOption('--model <dir>', 'the demo model directory (models/<name>)')
    .option('--corpus <file>', 'the corpus the model was trained on', 'tools/demo-model/data/corpus.jsonl.gz')
    .option('--metrics <file>', "train.py's metrics.json (default: <model>/training-metrics.json)")
    .option('--words <file>', 'dictionary word list', defaultWordListPath)
    .option('--out <file>', 'also write the JSON report here')
    .option('--threads <n>', 'CPU threads', '2')
    .option('--batch <n>', 'held-out documents scored per engine step', '64')
    .option('--skip-perplexity', 'only the questions')
    .option('--sample-repeats <n>', 'sampled answers this many times (seed sets 7000, 8000, ...): the spread of the sampled figures; targets use the first', '1')
    .action(async (f: DemoEvalFlags) => {
      const threads = intFlag('--threads', f.threads, 1, 1024);
      const batchSeqs = intFlag('--batch', f.batch, 1, 4096);
      const repeats = intFlag('--sample-repeats', f.sampleRepeats, 1, 100);
      const t0 = performance.now();
      const say = (m: string): boolean => process.stderr.write(`demo-eval: ${m}\n`);
      const [corpus, tokenizer, words] = await Promise.all([readCorpus(f.corpus), TextTokenizer.fromDir(f.model), readWordList(f.words)]);
      const metricsPath = f.metrics ?? join(f.model, 'training-metrics.json');
      const metrics = await readTrainingMetrics(metricsPath).catch((err: Error) => {
        say(`${err.message}; reporting our numbers without transformers' to compare`);
        return null;
      });
      const eot = tokenizer.tokenId('<|endoftext|>');
      if (eot === undefined) throw new Error(`${f.model}/tokenizer.json has no <|endoftext|> token; is this the demo model?`);
      const report: Record<string, unknown> = { bench: 'demo-eval', model: f.model, commit: gitCommit(), threads, targets: demoTargets };

      if (!f.skipPerplexity) {
        const limit = metrics?.heldout.doc_limit ?? null;
        const docs = limit === null ? corpus.test : corpus.test.slice(0, limit);
        const sequences = heldoutSequences(docs.map((d) => docIds(tokenizer, d)), eot, metrics?.heldout.max_tokens ?? heldoutMaxTokens);
        const longest = Math.max(...sequences.map((s) => s.length));
        const engine = await Engine.load(f.model, { threads, kvBlockSize: 16, numKvBlocks: batchSeqs * Math.ceil(longest / 16) });
        say(`scoring ${sequences.length} held-out documents (${sequences.reduce((n, s) => n + s.length - 1, 0)} tokens) on the CPU engine`);
        const tp = performance.now();
        let nll;
        try {
          nll = await meanNll(engine, sequences, { batchSeqs, onBatch: (d, n) => say(`  ${d}/${n} documents`) });
        } finally {
          engine.close();
        }
        const ours = { loss: nll.loss, ppl: Math.exp(nll.loss), tokens: nll.tokens, docs: sequences.length, idsSha256: idsDigest(sequences), seconds: (performance.now() - tp) / 1000 };
        const hf = metrics ? metrics.heldout : null;
        const relDiff = hf ? Math.abs(ours.ppl - hf.ppl) / hf.ppl : null;
        report['perplexity'] = {
          ours,
          transformers: hf,
          relDiff,
          sameTokenIds: hf ? hf.ids_sha256 === ours.idsSha256 : null,
          agree: relDiff === null ? null : relDiff < demoTargets.perplexityRelDiff && hf!.ids_sha256 === ours.idsSha256,
        };
        say(`held-out ppl: ours ${ours.ppl.toFixed(4)}${hf ? `, transformers ${hf.ppl.toFixed(4)} (relative difference ${(relDiff! * 100).toFixed(4)}%)` : ''}`);
      }

      const maxTokens = metrics?.reference_max_new_tokens ?? 48;
      const { engine, description } = await nativeEngineOpener({
        modelDir: f.model,
        role: 'colocated',
        config: resolveRankConfig({ device: { backend: 'cpu', threads }, serving: { kvCacheMib: 64 } }),
        onProgress: () => undefined,
      });
      say(`${description}; answering ${corpus.questions.length} held-out questions, greedy and at temperature 0.7`);
      const serving = new ServingEngine(engine, tokenizer, {
        scheduler: { maxNumSeqs: 1, maxNumBatchedTokens: 2048, longPrefillTokenThreshold: 0, dbo: { enabled: false, decodeTokenThreshold: 32, prefillTokenThreshold: 512 } },
        maxQueuedRequests: 1,
      });
      try {
        const greedy = await answerQuestions(serving, tokenizer, corpus.questions, words, { temperature: 0, seedBase: 0 }, maxTokens);
        const sampled = await answerQuestions(serving, tokenizer, corpus.questions, words, { temperature: 0.7, seedBase: 7000 }, maxTokens);
        const repeated = [sampled];
        for (let k = 1; k < repeats; k++) repeated.push(await answerQuestions(serving, tokenizer, corpus.questions, words, { temperature: 0.7, seedBase: 7000 + 1000 * k }, maxTokens));
        const spread = sampledSpread(repeated);
        const modes = { greedy, sampled };
        const ceiling = recitationCeiling(corpus.questions);
        report['questions'] = {
          count: corpus.questions.length,
          maxTokens,
          recitationCeiling: ceiling,
          greedy,
          sampled,
          greedyVsTransformers: compareGreedy(greedy, metrics, engine.info.eosTokenIds),
          sampledRepeats: spread,
          meetsTargets: Object.values(modes).every((m) => m.wordListShare >= demoTargets.wordListShare && m.contentOverlapShare >= demoTargets.contentOverlapShare),
        };
        for (const [name, m] of Object.entries(modes)) {
          say(`${name}: ${(m.wordListShare * 100).toFixed(1)}% dictionary words, ${(m.contentOverlapShare * 100).toFixed(0)}% of answers share a content word with the reference, ${(m.trainDefinitionOverlapShare * 100).toFixed(0)}% with the definition trained on`);
        }
        if (repeats > 1) {
          say(`sampled over ${repeats} seed sets: ${spread.contentOverlapShares.map((x) => `${(x * 100).toFixed(0)}%`).join(' ')} share a content word (mean ${(spread.meanContentOverlapShare * 100).toFixed(1)}%)`);
        }
        say(`reciting the trained definition would share a content word with ${(ceiling * 100).toFixed(0)}% of the references`);
      } finally {
        await serving.close();
        await engine.close();
      }
      report['seconds'] = (performance.now() - t0) / 1000;
      const json = JSON.stringify(report, null, 1);
      if (f.out) await writeFile(f.out, `${json}\n`);
      process.stdout.write(`${json}\n`);
    });
}
