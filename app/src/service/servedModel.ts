/**
 * What the running topology's API serves, from its GET /v1/models: the model id requests
 * name (the first listed) and the model's info for the console (name, parameters,
 * description, example prompts). Sends the launch's API key when the console has one.
 */
import { servedModelFromModelsList, type ServedModelInfo } from '@afd/shared';

export interface ServedModel {
  model: ServedModelInfo | null;
  modelId: string | null;
}

/** Reads `${apiUrl}/v1/models`; a refusal is `{ model: null, modelId: null }`, an unreachable API throws. */
export async function readServedModel(apiUrl: string, apiKey: string | undefined, timeoutMs = 5000): Promise<ServedModel> {
  const headers: Record<string, string> = apiKey ? { authorization: `Bearer ${apiKey}` } : {};
  const res = await fetch(`${apiUrl.replace(/\/+$/, '')}/v1/models`, { headers, signal: AbortSignal.timeout(timeoutMs) });
  if (!res.ok) return { model: null, modelId: null };
  const list: unknown = await res.json();
  const id = (list as { data?: { id?: unknown }[] } | null)?.data?.[0]?.id;
  return { model: servedModelFromModelsList(list), modelId: typeof id === 'string' ? id : null };
}
