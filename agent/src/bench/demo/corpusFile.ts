/**
 * The demo model's corpus file (tools/demo-model/corpus_io.py writes it): gzip JSONL, a
 * meta record first, then chat / text / qa records. The evaluation reads the held-out
 * ("test") records and the question set ("qa") from it.
 */
import { readFile } from 'node:fs/promises';
import { gunzipSync } from 'node:zlib';
import { z } from 'zod';

const message = z.object({ role: z.string(), content: z.string() });
const base = { id: z.string(), source: z.string() };

export const chatRecordSchema = z.object({ kind: z.literal('chat'), split: z.enum(['train', 'test']), messages: z.array(message).min(1), ...base });
export const textRecordSchema = z.object({ kind: z.literal('text'), split: z.enum(['train', 'test']), text: z.string(), ...base });
export const questionRecordSchema = z.object({
  kind: z.literal('qa'),
  id: z.string(),
  split: z.literal('qa'),
  word: z.string(),
  question: z.string(),
  /** The held-out WordNet gloss the answer is scored against. */
  reference: z.string(),
  /** GCIDE's definition of the same word, which training saw. */
  train_definition: z.string(),
});
const recordSchema = z.discriminatedUnion('kind', [chatRecordSchema, textRecordSchema, questionRecordSchema]);

export type ChatRecord = z.infer<typeof chatRecordSchema>;
export type TextRecord = z.infer<typeof textRecordSchema>;
export type QuestionRecord = z.infer<typeof questionRecordSchema>;
export type CorpusRecord = z.infer<typeof recordSchema>;

export interface Corpus {
  meta: Record<string, unknown>;
  /** Held-out chat and text records, in file order. */
  test: (ChatRecord | TextRecord)[];
  questions: QuestionRecord[];
  trainCount: number;
}

/** Parses the corpus; an invalid line is an error naming the file, line and problem. */
export function parseCorpus(path: string, gz: Buffer): Corpus {
  let text: string;
  try {
    text = gunzipSync(gz).toString('utf8');
  } catch (err) {
    throw new Error(`${path} is not a gzip file (${(err as Error).message}); it is written by tools/demo-model/prepare_corpus.py`);
  }
  const lines = text.split('\n').filter((l) => l.length > 0);
  const parseLine = (n: number): unknown => {
    try {
      return JSON.parse(lines[n]!);
    } catch (err) {
      throw new Error(`${path}:${n + 1}: not JSON (${(err as Error).message})`);
    }
  };
  const meta = parseLine(0) as Record<string, unknown> | null;
  if (!meta || meta['kind'] !== 'meta') throw new Error(`${path}:1: the first record must be the meta record`);
  const out: Corpus = { meta, test: [], questions: [], trainCount: 0 };
  for (let n = 1; n < lines.length; n++) {
    const r = recordSchema.safeParse(parseLine(n));
    if (!r.success) throw new Error(`${path}:${n + 1}: ${r.error.issues.map((i) => `${i.path.join('.') || '(record)'}: ${i.message}`).join('; ')}`);
    const rec = r.data;
    if (rec.kind === 'qa') out.questions.push(rec);
    else if (rec.split === 'test') out.test.push(rec);
    else out.trainCount += 1;
  }
  return out;
}

export async function readCorpus(path: string): Promise<Corpus> {
  let gz: Buffer;
  try {
    gz = await readFile(path);
  } catch (err) {
    throw new Error(`cannot read the corpus ${path} (${(err as Error).message}); run python3 tools/demo-model/prepare_corpus.py`);
  }
  return parseCorpus(path, gz);
}
