/**
 * The token view's data from a streamed chunk: each new token with its log-probability and
 * the top alternatives at its position, from a chat chunk (`choices[i].logprobs.content`)
 * or a completions chunk (`choices[i].logprobs`: parallel lists, alternatives as a map).
 */
import type { ChatTokenLogprob } from '@afd/shared';

/** A chat chunk choice's `logprobs` (OpenAI's ChatCompletionChunk.Choice.Logprobs). */
interface ChatChunkLogprobs {
  content?: { token: string; logprob: number; top_logprobs?: { token: string; logprob: number }[] }[] | null;
}

/** A completions chunk choice's `logprobs` (OpenAI's legacy shape, as vLLM streams it). */
interface CompletionChunkLogprobs {
  tokens?: string[];
  token_logprobs?: (number | null)[];
  top_logprobs?: (Record<string, number> | null)[] | null;
}

/** The tokens of a chat chunk choice (none when it carries no log-probabilities). */
export function chatChunkTokens(logprobs: ChatChunkLogprobs | null | undefined): ChatTokenLogprob[] {
  return (logprobs?.content ?? []).map((e) => ({ token: e.token, logprob: e.logprob, top: (e.top_logprobs ?? []).map((t) => ({ token: t.token, logprob: t.logprob })) }));
}

/** The tokens of a completions chunk choice (none when it carries no log-probabilities; a token without one, an echoed prompt's first, is left out). */
export function completionChunkTokens(logprobs: CompletionChunkLogprobs | null | undefined): ChatTokenLogprob[] {
  const out: ChatTokenLogprob[] = [];
  (logprobs?.tokens ?? []).forEach((token, i) => {
    const logprob = logprobs?.token_logprobs?.[i];
    if (logprob === null || logprob === undefined) return;
    const top = Object.entries(logprobs?.top_logprobs?.[i] ?? {}).map(([t, lp]) => ({ token: t, logprob: lp }));
    top.sort((a, b) => b.logprob - a.logprob);
    out.push({ token, logprob, top });
  });
  return out;
}
