/**
 * What the running topology serves, as its API reports it (GET /v1/models, field `afd`)
 * and the console shows it: the playground header and its example prompts.
 */
import { z } from 'zod';

export const servedModelInfoSchema = z.object({
  /** Display name, e.g. "afd-demo-moe". */
  name: z.string(),
  /** Parameters of the whole model; null when unknown. */
  parameters: z.int().nonnegative().nullable(),
  /** One line about the model (e.g. "demo model trained on ..."); null when it has none. */
  description: z.string().nullable(),
  /** Prompts the model answers well, for the playground to offer. */
  examplePrompts: z.array(z.object({ mode: z.enum(['chat', 'completion']), text: z.string().min(1) })),
});
export type ServedModelInfo = z.infer<typeof servedModelInfoSchema>;

/** The `afd` field of a /v1/models entry (snake_case like the rest of the OpenAI API). */
export const apiModelInfoSchema = z.object({
  name: z.string(),
  parameters: z.int().nonnegative().nullable(),
  description: z.string().nullable(),
  example_prompts: z.array(z.object({ mode: z.enum(['chat', 'completion']), text: z.string() })),
});

export function toApiModelInfo(m: ServedModelInfo): z.infer<typeof apiModelInfoSchema> {
  return { name: m.name, parameters: m.parameters, description: m.description, example_prompts: m.examplePrompts };
}

/** The model info of a /v1/models response body, or null when it has none (another server, an older agent). */
export function servedModelFromModelsList(body: unknown): ServedModelInfo | null {
  const first = (body as { data?: { afd?: unknown }[] } | null)?.data?.[0];
  const r = apiModelInfoSchema.safeParse(first?.afd);
  if (!r.success) return null;
  const examplePrompts = r.data.example_prompts.filter((p) => p.text.length > 0);
  return { name: r.data.name, parameters: r.data.parameters, description: r.data.description, examplePrompts };
}
