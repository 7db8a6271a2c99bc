/**
 * Which model a rank serves and where its weights come from (vLLM's model config): the
 * checkpoint directory, the load format, the dummy seed and the name clients send.
 * Defaults here only; the launch spec carries it for every rank.
 */
import { z } from 'zod';
import { dummySeedSchema, loadFormatSchema } from './loadFormat.js';

export const modelSourceSchema = z.strictObject({
  /**
   * HF checkpoint directory; null = the built-in model (the demo model where the agent has
   * it, else the random tiny one, created on demand). A launch spec requires an absolute
   * path (an agent's working directory means nothing to the client that sends it).
   */
  dir: z.string().min(1).nullable().default(null),
  /** Where the weights come from: auto (the safetensors), safetensors, or dummy (generated from seed). Default auto. */
  loadFormat: loadFormatSchema.default('auto'),
  /** Seed of dummy weights; every rank of a topology uses the same (default 0). */
  seed: dummySeedSchema.default(0),
  /** The `model` name clients send; null = the model directory's base name. */
  servedModelName: z.string().min(1).max(256).nullable().default(null),
});
export type ModelSource = z.output<typeof modelSourceSchema>;
export type ModelSourceInput = z.input<typeof modelSourceSchema>;
