/** The parts of tools/demo-model/train.py's metrics.json that the evaluation compares with. */
import { readFile } from 'node:fs/promises';
import { z } from 'zod';

export const trainingMetricsSchema = z.looseObject({
  model_name: z.string(),
  smoke: z.boolean(),
  heldout: z.looseObject({
    loss: z.number(),
    ppl: z.number(),
    tokens: z.int(),
    docs: z.int(),
    /** The first N held-out documents were scored (smoke runs); null = all. */
    doc_limit: z.int().nullable(),
    max_tokens: z.int(),
    ids_sha256: z.string(),
  }),
  reference_answers: z
    .array(z.looseObject({ id: z.string(), question: z.string(), promptIds: z.array(z.int()), greedyIds: z.array(z.int()), answer: z.string() }))
    .optional(),
  reference_max_new_tokens: z.int().optional(),
});

export type TrainingMetrics = z.infer<typeof trainingMetricsSchema>;

export async function readTrainingMetrics(path: string): Promise<TrainingMetrics> {
  let json: unknown;
  try {
    json = JSON.parse(await readFile(path, 'utf8'));
  } catch (err) {
    throw new Error(`cannot read the training metrics ${path} (${(err as Error).message}); train.py writes them as OUT/metrics.json`);
  }
  const r = trainingMetricsSchema.safeParse(json);
  if (!r.success) throw new Error(`${path}: not train.py's metrics (${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')})`);
  return r.data;
}
