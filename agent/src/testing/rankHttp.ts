/**
 * Test helper: HTTP calls to a rank a test started (RoleProcess.ts): greedy completions,
 * the colocated reference the AFD topology tests compare against, /health, and polling.
 */
import { RoleProcess } from './RoleProcess.js';

/** Greedy completion of `promptIds` (token ids) on a rank serving model "m"; returns the text and finish reason. */
export async function complete(apiUrl: string, promptIds: number[], maxTokens: number): Promise<{ text: string; finish: string }> {
  const res = await fetch(`${apiUrl}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', prompt: promptIds, max_tokens: maxTokens, temperature: 0, ignore_eos: true }),
  });
  const body = (await res.json()) as { choices?: { text: string; finish_reason: string }[]; error?: { message: string } };
  if (!res.ok || !body.choices) throw new Error(`completion failed (${res.status}): ${JSON.stringify(body)}`);
  return { text: body.choices[0]!.text, finish: body.choices[0]!.finish_reason };
}

/** Greedy completions of every prompt on a colocated rank of `model` (the reference of the AFD tests); the rank is stopped after. */
export async function colocatedCompletions(model: string, home: string, prompts: number[][], maxTokens: number): Promise<string[]> {
  const colocated = await RoleProcess.start({ role: 'colocated', model, home });
  try {
    const url = await colocated.ready();
    const out: string[] = [];
    for (const p of prompts) out.push((await complete(url, p, maxTokens)).text);
    return out;
  } finally {
    await colocated.stop();
  }
}

/** GET /health -> status code and body. */
export async function health(apiUrl: string): Promise<{ status: number; body: { status?: string; reason?: string } }> {
  const res = await fetch(`${apiUrl}/health`);
  return { status: res.status, body: (await res.json()) as { status?: string; reason?: string } };
}
