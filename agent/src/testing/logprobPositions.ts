/**
 * Test helper: the log-probabilities of OpenAI responses (chat, completions, vLLM's
 * prompt_logprobs), streamed and not, read into one neutral form, so that tests compare
 * token ids and values across requests, topologies and streaming. Requests should send
 * return_tokens_as_token_ids: true; tokens then read as "token_id:<id>".
 */
import { expect } from 'vitest';

/** One position: the chosen token (null logprob: an echoed prompt's first token) and its top list, most likely first. */
export interface Position {
  id: number;
  logprob: number | null;
  /** [token id, logprob], most likely first (ties: lower id first). */
  top: [number, number][];
}

/** The id of a "token_id:<id>" label. */
export function tokenIdOf(label: string): number {
  const m = /^token_id:(\d+)$/.exec(label);
  if (!m) throw new Error(`"${label}" is not a token_id:<id> label; send return_tokens_as_token_ids: true`);
  return Number(m[1]);
}

const byValue = (a: [number, number], b: [number, number]): number => b[1] - a[1] || a[0] - b[0];

interface ChatEntry {
  token: string;
  logprob: number;
  top_logprobs: { token: string; logprob: number }[];
}

/** Chat logprobs.content (one entry per generated token). */
export function chatPositions(content: readonly ChatEntry[] | null | undefined): Position[] {
  return (content ?? []).map((e) => ({ id: tokenIdOf(e.token), logprob: e.logprob, top: e.top_logprobs.map((t): [number, number] => [tokenIdOf(t.token), t.logprob]).sort(byValue) }));
}

/** The completions logprobs block (tokens, token_logprobs, top_logprobs as {token: logprob}). */
export interface CompletionLogprobs {
  tokens: string[];
  token_logprobs: (number | null)[];
  top_logprobs: (Record<string, number> | null)[];
  text_offset: number[];
}

/** Completions logprobs; several blocks (the chunks of a stream) are read in order. */
export function completionPositions(...blocks: (CompletionLogprobs | null | undefined)[]): Position[] {
  return blocks.flatMap((b) =>
    (b?.tokens ?? []).map((t, j) => ({
      id: tokenIdOf(t),
      logprob: b!.token_logprobs[j] ?? null,
      top: Object.entries(b!.top_logprobs[j] ?? {})
        .map(([k, lp]): [number, number] => [tokenIdOf(k), lp])
        .sort(byValue),
    })),
  );
}

/** vLLM's prompt_logprobs entry: the prompt token (with its rank) and the top k, by token id. */
export type PromptLogprobsEntry = Record<string, { logprob: number; rank: number; decoded_token: string }> | null;

/** vLLM's prompt_logprobs as positions: each position's prompt token (`promptIds[j]`) and every entry of its dict. */
export function promptPositions(entries: readonly PromptLogprobsEntry[], promptIds: readonly number[]): Position[] {
  return entries.map((e, j) => {
    const id = promptIds[j]!;
    if (e === null) return { id, logprob: null, top: [] };
    const top = Object.entries(e)
      .map(([k, v]): [number, number] => [Number(k), v.logprob])
      .sort(byValue);
    return { id, logprob: e[String(id)]?.logprob ?? null, top };
  });
}

/** Same ids everywhere, values within `tol`; `what` names the compared pair in failures. */
export function expectSamePositions(actual: readonly Position[], expected: readonly Position[], what: string, tol = 1e-4): void {
  expect(actual.length, `${what}: positions`).toBe(expected.length);
  expected.forEach((e, j) => {
    const a = actual[j]!;
    const where = `${what}, position ${j}`;
    expect(a.id, `${where}: token`).toBe(e.id);
    expect(a.top.map((t) => t[0]), `${where}: top ids`).toEqual(e.top.map((t) => t[0]));
    if (e.logprob === null) expect(a.logprob, where).toBeNull();
    else expect(Math.abs(a.logprob! - e.logprob), `${where}: logprob ${a.logprob} vs ${e.logprob}`).toBeLessThanOrEqual(tol);
    e.top.forEach((t, k) => expect(Math.abs(a.top[k]![1] - t[1]), `${where}: top ${k} (${a.top[k]![1]} vs ${t[1]})`).toBeLessThanOrEqual(tol));
  });
}
