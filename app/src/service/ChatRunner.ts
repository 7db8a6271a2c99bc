/**
 * Streams one chat or completion from the topology's OpenAI-compatible API and turns it
 * into bridge pushes: chat.accepted (the API took the request), chat.delta per chunk of
 * text or tool-call fragments with timings, then chat.done or chat.error (chatErrorText:
 * what broke, and where; a stream that closes without a finish reason is an error too).
 * The body is `openaiRequestBody`'s (what the Playground shows as code) plus the streaming
 * fields. Timings are taken here, where the bytes arrive, so they do not include IPC to
 * the renderer.
 */
import OpenAI, { APIUserAbortError } from 'openai';
import type { BridgePush, BridgePushChannel, BridgeRequest, ChatTokenLogprob, ChatToolCallDelta } from '@afd/shared';
import { openaiRequestBody } from '../common/openaiRequestBody.js';
import { chatChunkTokens, completionChunkTokens } from '../common/tokenLogprobs.js';
import { toolCallFragments } from '../common/toolCallStream.js';
import { describeChatError, truncatedStreamText } from './chatErrorText.js';

export type PushFn = <C extends BridgePushChannel>(channel: C, payload: BridgePush<C>) => void;

export interface ChatRunnerOptions {
  chatId: string;
  /** Base URL of the topology API, e.g. http://127.0.0.1:8000 (no /v1). */
  apiUrl: string;
  /** Bearer key of the topology's OpenAI API (a launch whose router is off loopback has one). */
  apiKey?: string;
  request: BridgeRequest<'chat.start'>;
  push: PushFn;
  /** Model id to send; resolved from /v1/models when omitted. */
  model?: string;
}

export class ChatRunner {
  private readonly abort = new AbortController();
  private aborted = false;
  private readonly client: OpenAI;

  constructor(private readonly opts: ChatRunnerOptions) {
    this.client = new OpenAI({ baseURL: `${opts.apiUrl.replace(/\/+$/, '')}/v1`, apiKey: opts.apiKey ?? 'afd-console', maxRetries: 0, timeout: 10 * 60_000 });
  }

  stop(): void {
    this.aborted = true;
    this.abort.abort();
  }

  /** Runs to the end; never throws (failures become chat.error). */
  async run(): Promise<void> {
    const { chatId, request, push } = this.opts;
    const t0 = performance.now();
    let prev = t0;
    let ttftMs: number | null = null;
    let firstAt = 0;
    let lastAt = 0;
    let chunks = 0;
    let finishReason: BridgePush<'chat.done'>['finishReason'] = 'stop';
    let finished = false;
    // The API answered and its stream began: a failure from here on broke the stream.
    let streamBegan = false;
    let usage = { promptTokens: 0, completionTokens: 0 };
    // Every chunk carries the usage so far (continuous usage stats): a stopped reply keeps its counts.
    const onUsage = (u: { prompt_tokens: number; completion_tokens: number } | null | undefined): void => {
      if (u) usage = { promptTokens: u.prompt_tokens, completionTokens: u.completion_tokens };
    };
    const onDelta = (text: string, toolCalls: ChatToolCallDelta[], tokens: ChatTokenLogprob[]): void => {
      if (text === '' && toolCalls.length === 0 && tokens.length === 0) return;
      const now = performance.now();
      if (ttftMs === null) {
        ttftMs = now - t0;
        firstAt = now;
      }
      lastAt = now;
      chunks += 1;
      const fragments = toolCalls.length > 0 ? { toolCalls } : {};
      const logprobs = tokens.length > 0 ? { tokens } : {};
      push('chat.delta', { chatId, text, ...fragments, ...logprobs, stage: chunks === 1 ? 'prefill' : 'decode', timings: { sinceStartMs: now - t0, sincePrevMs: now - prev } });
      prev = now;
    };
    const onFinish = (reason: string | null | undefined): void => {
      if (reason) finished = true;
      if (reason === 'length' || reason === 'tool_calls') finishReason = reason;
    };
    try {
      const model = this.opts.model ?? (await this.resolveModel());
      const streaming = {
        stream: true as const,
        // continuous_usage_stats is the vLLM extension the agent's API implements.
        stream_options: { include_usage: true, continuous_usage_stats: true } as { include_usage: boolean },
      };
      const signal = this.abort.signal;
      const req = openaiRequestBody(request, model);
      if (req.path === '/v1/chat/completions') {
        const stream = await this.client.chat.completions.create({ ...req.body, ...streaming }, { signal });
        push('chat.accepted', { chatId, sinceStartMs: performance.now() - t0, model });
        streamBegan = true;
        for await (const chunk of stream) {
          for (const c of chunk.choices) {
            onDelta(c.delta?.content ?? '', toolCallFragments(c.delta?.tool_calls), chatChunkTokens(c.logprobs));
            onFinish(c.finish_reason);
          }
          onUsage(chunk.usage);
        }
      } else {
        const stream = await this.client.completions.create({ ...req.body, ...streaming }, { signal });
        push('chat.accepted', { chatId, sinceStartMs: performance.now() - t0, model });
        streamBegan = true;
        for await (const chunk of stream) {
          for (const c of chunk.choices) {
            onDelta(c.text ?? '', [], completionChunkTokens(c.logprobs));
            onFinish(c.finish_reason);
          }
          onUsage(chunk.usage);
        }
      }
    } catch (err) {
      if (!(this.aborted || err instanceof APIUserAbortError)) {
        push('chat.error', { chatId, message: describeChatError(err, { apiUrl: this.opts.apiUrl, streaming: streamBegan }) });
        return;
      }
      finishReason = 'aborted';
    }
    // The SDK ends an aborted stream quietly (no error): a stop before the finish chunk is a stop.
    if (this.aborted && !finished) finishReason = 'aborted';
    // So it does a stream the server closed early: without a finish reason the reply was cut short.
    if (!this.aborted && !finished) {
      push('chat.error', { chatId, message: truncatedStreamText(chunks) });
      return;
    }
    const end = performance.now();
    const completionTokens = usage.completionTokens > 0 ? usage.completionTokens : chunks;
    const decodeMs = lastAt - firstAt;
    push('chat.done', {
      chatId,
      finishReason,
      usage: { promptTokens: usage.promptTokens, completionTokens },
      timings: {
        ttftMs,
        totalMs: end - t0,
        tokensPerSecond: completionTokens > 1 && decodeMs > 0 ? ((completionTokens - 1) * 1000) / decodeMs : 0,
      },
    });
  }

  private async resolveModel(): Promise<string> {
    const page = await this.client.models.list({ signal: this.abort.signal });
    const first = page.data[0];
    if (!first) throw new Error(`the topology API at ${this.opts.apiUrl} lists no models`);
    return first.id;
  }
}
