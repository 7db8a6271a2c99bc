/**
 * What structured outputs cost on this machine's CPU, measured through the GrammarService
 * (the serving path: worker threads, messages, masks copied back):
 *
 *   - the match worker's start (vocabulary load) and first compile;
 *   - cold compiles of distinct flat JSON schemas (`fields` properties: string, integer,
 *     boolean in turn), with any whitespace (the default) and with fixed whitespace;
 *     wall time of compile() and the worker's own check and compile times;
 *   - cached compiles of the same schemas (a hash and a map lookup);
 *   - per-step mask time: advance() of `batch` matchers (one token each, then the mask), at
 *     each batch size, over `steps` steps; matchers that reach their grammar's end restart.
 */
import { GrammarService } from '../serving/grammar/GrammarService.js';
import type { GrammarSpec } from '../serving/grammar/grammarSpec.js';
import { allowedTokens, isAllowed } from '../serving/grammar/maskBits.js';

export interface GrammarBenchOptions {
  /** Bundle whose entry runs grammar workers. */
  script: string;
  modelDir: string;
  vocabSize: number;
  stopTokenIds: number[];
  /** Properties per schema (default 50). */
  fields?: number;
  /** Distinct schemas compiled cold per whitespace mode, after a first one reported apart (default 6). */
  schemas?: number;
  /** Batch sizes of the mask measurement (default 1 and 32). */
  batches?: number[];
  /** Steps per batch size (default 100). */
  steps?: number;
}

/** Median, 90th percentile, min and max (ms). */
export interface Stats {
  median: number;
  p90: number;
  min: number;
  max: number;
  n: number;
}

export interface GrammarBenchReport {
  vocabSize: number;
  vocabType: string | null;
  fields: number;
  /** The match worker's start (vocabulary and warm-up compiles; worker time) and the first compile() (wall; waits for the start). */
  startup: { loadMs: number; firstCompileWallMs: number };
  /** Cold compiles per whitespace mode: wall time of compile(), worker compile and check times (stats without the mode's first compile, `first`). */
  cold: Record<'anyWhitespace' | 'fixedWhitespace', { wall: Stats; compile: Stats; check: Stats; first: { wallMs: number; checkMs: number; compileMs: number } }>;
  /** compile() of a spec already compiled. */
  cachedWall: Stats;
  /** advance() per step by batch size: wall and worker time. */
  masks: { batch: number; wall: Stats; worker: Stats; perRowUs: number }[];
}

export function stats(xs: readonly number[]): Stats {
  const s = [...xs].sort((a, b) => a - b);
  const at = (q: number): number => s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN;
  return { median: at(0.5), p90: at(0.9), min: s[0] ?? NaN, max: s[s.length - 1] ?? NaN, n: s.length };
}

/** A flat object schema of `fields` required properties, names unique to `tag`. */
export function flatSchema(tag: string, fields: number): Record<string, unknown> {
  const types = ['string', 'integer', 'boolean'];
  const properties: Record<string, unknown> = {};
  for (let i = 0; i < fields; i++) properties[`${tag}_field_${i}`] = { type: types[i % 3] };
  return { type: 'object', properties, required: Object.keys(properties) };
}

/** A deterministic stand-in for sampling: a random allowed token that is not a stop token (undefined when only stop tokens are allowed). */
function nextToken(masks: Int32Array, row: number, words: number, vocabSize: number, stops: ReadonlySet<number>, rand: () => number): number | undefined {
  for (let i = 0; i < 32; i++) {
    const t = Math.floor(rand() * vocabSize);
    if (isAllowed(masks, row, words, t) && !stops.has(t)) return t;
  }
  const all = allowedTokens(masks, row, words, vocabSize).filter((t) => !stops.has(t));
  return all.length > 0 ? all[Math.floor(rand() * all.length)] : undefined;
}

export async function runGrammarBench(o: GrammarBenchOptions): Promise<GrammarBenchReport> {
  const fields = o.fields ?? 50;
  const count = o.schemas ?? 6;
  const service = new GrammarService({ script: o.script, modelDir: o.modelDir, vocabSize: o.vocabSize, stopTokenIds: o.stopTokenIds, cacheSize: 4 * count + 8 });
  try {
    let t = performance.now();
    await service.compile({ type: 'choice', choices: ['warm'], param: 'bench' });
    const startup = { loadMs: service.loaded?.loadMs ?? NaN, firstCompileWallMs: performance.now() - t };
    // The two whitespace modes take turns, so that neither gets all of the warm-up (WebAssembly
    // tier-up, allocator growth); each mode's first compile is reported apart from the rest.
    const specs: GrammarSpec[] = [];
    const samples = { anyWhitespace: { wall: [] as number[], compile: [] as number[], check: [] as number[] }, fixedWhitespace: { wall: [] as number[], compile: [] as number[], check: [] as number[] } };
    for (let k = 0; k < count + 1; k++) {
      for (const anyWhitespace of [true, false]) {
        const spec: GrammarSpec = { type: 'json_schema', schema: flatSchema(`s${k}${anyWhitespace ? 'a' : 'f'}`, fields), param: 'bench', anyWhitespace };
        t = performance.now();
        const h = await service.compile(spec);
        const into = samples[anyWhitespace ? 'anyWhitespace' : 'fixedWhitespace'];
        into.wall.push(performance.now() - t);
        into.compile.push(h.compileMs);
        into.check.push(h.checkMs);
        specs.push(spec);
      }
    }
    const coldOf = (x: (typeof samples)['anyWhitespace']): GrammarBenchReport['cold']['anyWhitespace'] => ({ wall: stats(x.wall.slice(1)), compile: stats(x.compile.slice(1)), check: stats(x.check.slice(1)), first: { wallMs: x.wall[0]!, checkMs: x.check[0]!, compileMs: x.compile[0]! } });
    const cold = { anyWhitespace: coldOf(samples.anyWhitespace), fixedWhitespace: coldOf(samples.fixedWhitespace) };
    const cached: number[] = [];
    for (let r = 0; r < 5; r++) {
      for (const spec of specs) {
        t = performance.now();
        await service.compile(spec);
        cached.push(performance.now() - t);
      }
    }
    const masks: GrammarBenchReport['masks'] = [];
    const handle = await service.compile(specs[0]!);
    const stops = new Set(o.stopTokenIds);
    let seed = 12345;
    const rand = (): number => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
    for (const batch of o.batches ?? [1, 32]) {
      let matchers = Array.from({ length: batch }, () => service.newMatcher(handle));
      let fresh: number[][] = matchers.map(() => []);
      const wall: number[] = [];
      const worker: number[] = [];
      for (let step = 0; step < (o.steps ?? 100); step++) {
        t = performance.now();
        const r = await service.advance(matchers.map((matcher, i) => ({ matcher, newTokens: fresh[i]! })));
        wall.push(performance.now() - t);
        worker.push(r.workerMs);
        const next = matchers.map((_, i) => nextToken(r.masks, i, r.wordsPerRow, o.vocabSize, stops, rand));
        matchers = matchers.map((m, i) => {
          if (next[i] !== undefined) return m;
          service.free(m); // its grammar ended: start over
          return service.newMatcher(handle);
        });
        fresh = next.map((tok) => (tok === undefined ? [] : [tok]));
      }
      for (const m of matchers) service.free(m);
      const w = stats(worker);
      masks.push({ batch, wall: stats(wall), worker: w, perRowUs: (w.median * 1000) / batch });
    }
    return { vocabSize: o.vocabSize, vocabType: service.loaded?.vocabType ?? null, fields, startup, cold, cachedWall: stats(cached), masks };
  } finally {
    await service.close();
  }
}

const ms = (x: number): string => (x < 1 ? x.toFixed(3) : x.toFixed(1));
const line = (s: Stats): string => `median ${ms(s.median)} ms, p90 ${ms(s.p90)}, min ${ms(s.min)}, max ${ms(s.max)} (n=${s.n})`;

/** The report as text. */
export function formatGrammarBench(r: GrammarBenchReport): string {
  const out = [
    `grammar bench: vocabulary ${r.vocabSize} (${r.vocabType}), ${r.fields}-field flat JSON schemas`,
    `  match worker start (vocabulary, warm-up compiles): ${ms(r.startup.loadMs)} ms; first compile() ${ms(r.startup.firstCompileWallMs)} ms (waits for the start)`,
  ];
  for (const [mode, c] of Object.entries(r.cold)) {
    out.push(`  cold compile, ${mode}: wall ${line(c.wall)}`);
    out.push(`      first of the mode: wall ${ms(c.first.wallMs)} ms (check ${ms(c.first.checkMs)}, compile ${ms(c.first.compileMs)})`);
    out.push(`      worker compile ${line(c.compile)}; check ${ms(c.check.median)} ms`);
  }
  out.push(`  cached compile: ${line(r.cachedWall)}`);
  for (const m of r.masks) out.push(`  masks, batch ${m.batch}: wall ${line(m.wall)}; worker ${ms(m.worker.median)} ms (${m.perRowUs.toFixed(0)} us per row)`);
  return out.join('\n');
}
