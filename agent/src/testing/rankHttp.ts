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

/**
 * Sends every prompt to two attention ranks at once (prompt i to ranks i and i+1 of
 * `urls`): batches of two sequences on some ranks (DBO splits them), idle block peers on
 * others. Returns each greedy completion with the prompt index and rank it came from.
 */
export async function completeOnTwoRanks(urls: string[], prompts: number[][], maxTokens: number): Promise<{ i: number; rank: number; text: string }[]> {
  const jobs = prompts.flatMap((p, i) => [0, 1].map((k) => ({ prompt: p, i, rank: (i + k) % urls.length })));
  return Promise.all(jobs.map(async (j) => ({ i: j.i, rank: j.rank, text: (await complete(urls[j.rank]!, j.prompt, maxTokens)).text })));
}

/** GET /health -> status code and body. */
export async function health(apiUrl: string): Promise<{ status: number; body: { status?: string; reason?: string } }> {
  const res = await fetch(`${apiUrl}/health`);
  return { status: res.status, body: (await res.json()) as { status?: string; reason?: string } };
}
