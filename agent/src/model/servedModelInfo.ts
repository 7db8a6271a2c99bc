/**
 * What a serving rank says about its model in GET /v1/models (field `afd`): the display
 * name, the parameter count (from config.json, the whole model whatever the role), and,
 * from an optional afd-model-info.json in the model folder, a one-line description and example
 * prompts the model answers well. The console's playground shows them in its header.
 */
import { readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { z } from 'zod';
import { modelTensors, readModelConfig } from '@afd/native/checkpoint';
import type { ServedModelInfo } from '@afd/shared';

/** The optional file a model folder may carry for the console. */
export const modelInfoFileName = 'afd-model-info.json';

const modelInfoFileSchema = z.object({
  display_name: z.string().min(1).optional(),
  description: z.string().min(1).optional(),
  example_prompts: z.array(z.object({ mode: z.enum(['chat', 'completion']), text: z.string().min(1) })).default([]),
});

/** Parameters of the whole model described by config.json (embeddings counted once when tied). */
export async function countParameters(dir: string): Promise<number> {
  const config = await readModelConfig(dir);
  return modelTensors(config).reduce((n, t) => n + t.shape.reduce((a, b) => a * b, 1), 0);
}

/** Reads the model's info; a broken afd-model-info.json is an error that names the file and the problem. */
export async function readServedModelInfo(dir: string, servedName: string = basename(dir)): Promise<ServedModelInfo> {
  const path = join(dir, modelInfoFileName);
  let raw: string | null = null;
  try {
    raw = await readFile(path, 'utf8');
  } catch {
    raw = null; // optional
  }
  let file: z.infer<typeof modelInfoFileSchema> = { example_prompts: [] };
  if (raw !== null) {
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch (err) {
      throw new Error(`${path} is not valid JSON (${(err as Error).message})`);
    }
    const r = modelInfoFileSchema.safeParse(json);
    if (!r.success) throw new Error(`${path}: ${r.error.issues.map((i) => `${i.path.join('.') || '(file)'}: ${i.message}`).join('; ')}`);
    file = r.data;
  }
  return {
    name: file.display_name ?? servedName,
    // Display only: the engine has validated config.json by now (fakes in tests have none).
    parameters: await countParameters(dir).catch(() => null),
    description: file.description ?? null,
    examplePrompts: file.example_prompts,
  };
}
