/**
 * One streamed /v1/completions or /v1/chat/completions request, timed the way `vllm bench
 * serve` times it: TTFT at the first chunk with text, ITL between text chunks, E2E at the end
 * of the stream. Usage comes from the final chunk (stream_options.include_usage), with
 * prompt_tokens_details.cached_tokens when the server reports prefix-cache hits.
 */
import { SseReader } from '../../util/SseReader.js';

export interface RequestOutcome {
  ok: boolean;
  error: string | null;
  /** Milliseconds from send to the first text chunk. */
  ttftMs: number;
  /** Milliseconds between successive text chunks. */
  itlMs: number[];
  /** Milliseconds from send to the end of the stream. */
  e2eMs: number;
  /** Prompt tokens per the server's usage (or the intended length when absent). */
  promptTokens: number;
  /** Generated tokens per the server's usage (or the number of text chunks). */
  outputTokens: number;
  /** Prompt tokens served from the prefix cache (usage.prompt_tokens_details.cached_tokens); null when the server does not report it. */
  cachedTokens: number | null;
  /** The generated text (the text chunks joined): a multi-turn conversation sends it back as the assistant message. */
  text: string;
}

export interface StreamRequestOptions {
  baseUrl: string;
  endpoint: string;
  apiKey: string | undefined;
  body: Record<string, unknown>;
  fallbackPromptTokens: number;
  signal?: AbortSignal;
}

export async function streamRequest(o: StreamRequestOptions): Promise<RequestOutcome> {
  const t0 = performance.now();
  const out: RequestOutcome = { ok: false, error: null, ttftMs: 0, itlMs: [], e2eMs: 0, promptTokens: o.fallbackPromptTokens, outputTokens: 0, cachedTokens: null, text: '' };
  let last = 0;
  let chunks = 0;
  let usageSeen = false;
  try {
    const res = await fetch(`${o.baseUrl}${o.endpoint}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(o.apiKey ? { authorization: `Bearer ${o.apiKey}` } : {}) },
      body: JSON.stringify({ ...o.body, stream: true, stream_options: { include_usage: true } }),
      signal: o.signal ?? null,
    });
    if (!res.ok || !res.body) {
      out.error = `HTTP ${res.status}: ${(await res.text()).slice(0, 300)}`;
      return out;
    }
    for await (const event of new SseReader(res.body as unknown as AsyncIterable<Uint8Array>).events()) {
      const data = event.split('\n').find((l) => l.startsWith('data:'))?.slice(5).trim();
      if (!data || data === '[DONE]') continue;
      const msg = JSON.parse(data) as {
        error?: { message: string };
        choices?: { text?: string; delta?: { content?: string } }[];
        usage?: { prompt_tokens: number; completion_tokens: number; prompt_tokens_details?: { cached_tokens?: number } | null } | null;
      };
      if (msg.error) throw new Error(msg.error.message);
      const text = msg.choices?.[0]?.text ?? msg.choices?.[0]?.delta?.content ?? '';
      if (text.length > 0) {
        const t = performance.now();
        if (chunks === 0) out.ttftMs = t - t0;
        else out.itlMs.push(t - last);
        last = t;
        chunks++;
        out.text += text;
      }
      if (msg.usage) {
        usageSeen = true;
        out.promptTokens = msg.usage.prompt_tokens;
        out.outputTokens = msg.usage.completion_tokens;
        const cached = msg.usage.prompt_tokens_details?.cached_tokens;
        if (typeof cached === 'number') out.cachedTokens = cached;
      }
    }
    out.e2eMs = performance.now() - t0;
    if (!usageSeen) out.outputTokens = chunks;
    out.ok = true;
  } catch (err) {
    out.error = (err as Error).message;
  }
  return out;
}
