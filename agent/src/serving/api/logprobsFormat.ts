/**
 * Log-probabilities in the response shapes of the OpenAI API and vLLM:
 *
 *   chat         logprobs: {content: [{token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}]}
 *   completions  logprobs: {tokens, token_logprobs, top_logprobs: [{token: logprob}], text_offset}
 *   vLLM         prompt_logprobs: [null, {"<token id>": {logprob, rank, decoded_token}}, ...]
 *
 * A token is shown as its own string (the token decoded alone, special tokens included, as
 * vLLM shows it) or, with return_tokens_as_token_ids, as "token_id:<id>"; bytes are the
 * UTF-8 bytes of its string. -Infinity (a banned token) is reported as -9999.0, as OpenAI
 * and vLLM do (JSON has no infinity). Values are the engine's: after logit bias, penalties
 * and temperature (temperature 0 counts as 1), before top-k / top-p / min-p.
 */
import type { TokenLogprob } from '../scheduler/logprobRows.js';

/** How tokens are shown. */
export interface TokenDisplay {
  /** A token's own string. */
  tokenString(id: number): string;
  /** Show tokens as "token_id:<id>" (vLLM return_tokens_as_token_ids). */
  asIds: boolean;
}

/** -Infinity as OpenAI and vLLM report it. */
const clamp = (lp: number): number => Math.max(lp, -9999);
const label = (d: TokenDisplay, id: number): string => (d.asIds ? `token_id:${id}` : d.tokenString(id));
const bytesOf = (s: string): number[] => [...Buffer.from(s, 'utf8')];
/** Length in characters (code points), as vLLM's text_offset counts. */
const charLength = (s: string): number => [...s].length;

/** Chat: one content entry per generated token, with its top k (most likely first). */
export function chatLogprobs(rows: readonly TokenLogprob[], d: TokenDisplay): { content: object[] } {
  const entry = (id: number, lp: number): { token: string; logprob: number; bytes: number[] } => ({ token: label(d, id), logprob: clamp(lp), bytes: bytesOf(d.tokenString(id)) });
  return { content: rows.map((r) => ({ ...entry(r.tokenId, r.logprob), top_logprobs: r.top.map((t) => entry(t.tokenId, t.logprob)) })) };
}

/** One token of a completions logprobs block: its row, or null (the prompt's first token). */
export interface CompletionToken {
  tokenId: number;
  row: TokenLogprob | null;
}

/**
 * Completions: tokens, their log-probabilities, each one's top k + 1 as {token: logprob}
 * (the chosen token first, then the top k, each token once, as vLLM) and the text offset
 * of each token (from `firstOffset`, adding each token's string length).
 */
export function completionLogprobs(tokens: readonly CompletionToken[], d: TokenDisplay, firstOffset: number): object {
  const out = { tokens: [] as string[], token_logprobs: [] as (number | null)[], top_logprobs: [] as (Record<string, number> | null)[], text_offset: [] as number[] };
  let offset = firstOffset;
  for (const { tokenId, row } of tokens) {
    const token = label(d, tokenId);
    out.tokens.push(token);
    out.text_offset.push(offset);
    offset += charLength(token);
    out.token_logprobs.push(row ? clamp(row.logprob) : null);
    if (!row) {
      out.top_logprobs.push(null);
      continue;
    }
    const top: Record<string, number> = {};
    const seen = new Set<number>();
    for (const e of [row, ...row.top]) {
      if (seen.has(e.tokenId)) continue;
      seen.add(e.tokenId);
      top[label(d, e.tokenId)] = clamp(e.logprob);
    }
    out.top_logprobs.push(top);
  }
  return out;
}

/** The tokens of an echoed prompt: the first without a row, then prompt token j + 1 with row j. */
export function promptTokens(promptIds: readonly number[], rows: readonly TokenLogprob[] | null): CompletionToken[] {
  return promptIds.map((tokenId, j) => ({ tokenId, row: j === 0 ? null : (rows?.[j - 1] ?? null) }));
}

/**
 * vLLM's prompt_logprobs: null for the first prompt token, then per token a dict by token id
 * of the prompt token itself (its rank) and the row's top k (ranks 1..k).
 */
export function promptLogprobsField(rows: readonly TokenLogprob[], d: TokenDisplay): (Record<string, { logprob: number; rank: number; decoded_token: string }> | null)[] {
  return [
    null,
    ...rows.map((r) => {
      const dict: Record<string, { logprob: number; rank: number; decoded_token: string }> = {};
      dict[String(r.tokenId)] = { logprob: clamp(r.logprob), rank: r.rank, decoded_token: d.tokenString(r.tokenId) };
      r.top.forEach((t, i) => {
        if (t.tokenId !== r.tokenId) dict[String(t.tokenId)] = { logprob: clamp(t.logprob), rank: i + 1, decoded_token: d.tokenString(t.tokenId) };
      });
      return dict;
    }),
  ];
}
