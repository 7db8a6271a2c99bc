// Writes the demo model's card, models/afd-demo-moe/README.md, from tools/demo-model/model-card.md
// and the numbers that programs wrote: training-metrics.json (train.py on the GPU host),
// eval.json (afd-bench demo-eval) and tools/demo-model/data/corpus.meta.json.
//   node tools/demo-model/write-card.mjs [--model DIR] [--out FILE]
// Fails, naming them, when a number is missing: a card is never written with a gap.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const root = new URL('../..', import.meta.url).pathname;
const here = join(root, 'tools', 'demo-model');

function readJson(path, what) {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new Error(`cannot read ${what} ${path} (${err.message})`);
  }
}

const pct = (x, digits = 1) => (typeof x === 'number' ? `${(x * 100).toFixed(digits)}%` : undefined);
const num = (x, digits = 4) => (typeof x === 'number' ? x.toFixed(digits) : undefined);
const int = (x) => (typeof x === 'number' ? x.toLocaleString('en-US') : undefined);

/** The card's fields from the three files; undefined marks a missing number. */
export function cardFields(metrics, evaluation, corpusMeta) {
  const cfg = metrics.model?.config ?? {};
  const t = metrics.training ?? {};
  const files = Object.keys(metrics.export?.files ?? {}).filter((f) => f.endsWith('.safetensors'));
  const weights = Object.entries(metrics.export?.files ?? {}).filter(([f]) => f.endsWith('.safetensors')).reduce((n, [, b]) => n + b, 0);
  const stats = corpusMeta.stats?.records ?? {};
  const q = evaluation.questions ?? {};
  const ppl = evaluation.perplexity ?? {};
  const gvt = q.greedyVsTransformers;
  return {
    name: metrics.model_name,
    parameters: int(metrics.model?.parameters),
    weights_mb: weights ? (weights / 1e6).toFixed(1) : undefined,
    shards: files.length === 1 ? 'one file' : `${files.length} shards`,
    layers: cfg.num_hidden_layers,
    last_layer: cfg.num_hidden_layers === undefined ? undefined : cfg.num_hidden_layers - 1,
    dense_intermediate: cfg.intermediate_size,
    experts: cfg.num_experts,
    moe_intermediate: cfg.moe_intermediate_size,
    top_k: cfg.num_experts_per_tok,
    hidden: cfg.hidden_size,
    heads: cfg.num_attention_heads,
    kv_heads: cfg.num_key_value_heads,
    head_dim: cfg.head_dim,
    vocab: cfg.vocab_size,
    seq_len: t.seq_len,
    corpus_mb: corpusMeta.bytes ? (corpusMeta.bytes / 1e6).toFixed(1) : undefined,
    corpus_seed: corpusMeta.seed,
    sources_table: Object.entries(corpusMeta.sources ?? {})
      .map(([n, s]) => `| ${n} | ${s.version} | ${s.what} | ${s.license} |`)
      .join('\n') || undefined,
    records_table: Object.entries(stats).map(([k, v]) => `${k} ${v.toLocaleString('en-US')}`).join(', ') || undefined,
    test_words: corpusMeta.heldout?.test_words,
    qa_count: corpusMeta.stats?.qa,
    qa_skipped: corpusMeta.stats?.qa_skipped_generic_gloss?.length ? ` (skipped for a gloss found in training: ${corpusMeta.stats.qa_skipped_generic_gloss.join(', ')})` : '',
    heldout_docs: int(metrics.heldout?.docs),
    heldout_tokens: int(metrics.heldout?.tokens),
    device: metrics.versions?.device ?? 'the CPU',
    torch: metrics.versions?.torch,
    transformers: metrics.versions?.transformers,
    tokenizers: metrics.versions?.tokenizers,
    python: metrics.versions?.python,
    commit: metrics.commit ?? undefined,
    command: Array.isArray(metrics.command) ? metrics.command.join(' ') : undefined,
    tokenizer_chars: int(metrics.tokenizer?.trained_on_chars),
    train_tokens: int(metrics.corpus?.train_tokens),
    chars_per_token: metrics.corpus?.chars_per_token,
    steps: int(t.steps),
    batch_size: t.batch_size,
    tokens_seen: int(t.tokens),
    epochs: t.epochs,
    train_seconds: t.seconds,
    tokens_per_second: int(t.tokens_per_second),
    weight_decay: t.weight_decay,
    peak_lr: t.peak_lr,
    aux_coef: t.aux_loss_coef,
    compile: metrics.model?.compile === undefined ? undefined : metrics.model.compile ? 'on' : 'off',
    equivalence: typeof metrics.export?.equivalence_rel_error === 'number' ? `error of ${metrics.export.equivalence_rel_error.toExponential(1)}` : undefined,
    seed: metrics.seed,
    final_train_loss: num(t.final_train_loss),
    heldout_loss: num(metrics.heldout?.loss),
    heldout_ppl: num(metrics.heldout?.ppl, 3),
    eval_threads: evaluation.threads,
    eval_commit: evaluation.commit,
    ppl_ours: num(ppl.ours?.ppl),
    ppl_hf: num(ppl.transformers?.ppl),
    ppl_rel: pct(ppl.relDiff, 4),
    ppl_same_ids: ppl.sameTokenIds === undefined ? undefined : ppl.sameTokenIds ? 'yes' : 'no',
    greedy_words: pct(q.greedy?.wordListShare),
    greedy_overlap: pct(q.greedy?.contentOverlapShare, 0),
    sampled_words: pct(q.sampled?.wordListShare),
    sampled_overlap: pct(q.sampled?.contentOverlapShare, 0),
    greedy_recall: pct(q.greedy?.trainDefinitionOverlapShare, 0),
    sampled_recall: pct(q.sampled?.trainDefinitionOverlapShare, 0),
    recitation_ceiling: pct(q.recitationCeiling, 0),
    sampled_spread: q.sampledRepeats
      ? `${q.sampledRepeats.seedSets} seed sets: ${q.sampledRepeats.contentOverlapShares.map((x) => pct(x, 0)).join(', ')} (mean ${pct(q.sampledRepeats.meanContentOverlapShare)})`
      : undefined,
    greedy_same: gvt ? `${gvt.sameTokens} of ${gvt.compared}` : undefined,
    examples: (q.greedy?.answers ?? [])
      .slice(0, 6)
      .map((a) => `- **${a.question}** ${a.answer.replace(/\s+/g, ' ')}\n  *(reference: ${a.reference})*`)
      .join('\n') || undefined,
  };
}

/** Fills {{field}} placeholders; throws naming every missing field. */
export function renderCard(template, fields) {
  const missing = new Set();
  const out = template.replace(/\{\{(\w+)\}\}/g, (_, k) => {
    const v = fields[k];
    if (v === undefined || v === null) {
      missing.add(k);
      return '';
    }
    return String(v);
  });
  if (missing.size > 0) throw new Error(`the model card lacks: ${[...missing].join(', ')} (run train.py, install-checkpoint.mjs and afd-bench demo-eval first)`);
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: { model: { type: 'string' }, out: { type: 'string' }, 'corpus-meta': { type: 'string' } } });
  const model = values.model ?? join(root, 'models', 'afd-demo-moe');
  try {
    const fields = cardFields(
      readJson(join(model, 'training-metrics.json'), 'the training metrics'),
      readJson(join(model, 'eval.json'), 'the evaluation report (afd-bench demo-eval --out)'),
      readJson(values['corpus-meta'] ?? join(here, 'data', 'corpus.meta.json'), 'the corpus meta'),
    );
    const out = values.out ?? join(model, 'README.md');
    writeFileSync(out, renderCard(readFileSync(join(here, 'model-card.md'), 'utf8'), fields));
    console.log(`write-card: wrote ${out}`);
  } catch (err) {
    console.error(`write-card: ${err.message}`);
    process.exit(1);
  }
}
