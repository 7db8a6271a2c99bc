/**
 * Streams or collects one generation as an OpenAI response. The endpoint supplies how a
 * chunk and a full response look; this file owns SSE, usage and client disconnects
 * (a closed connection aborts the request, which frees its KV blocks).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestHandle } from '../ServingEngine.js';
import type { FinishReason } from '../scheduler/Sequence.js';
import { ApiError, fromServingError } from './ApiError.js';

const ABORTED = 'the request was aborted because the server is stopping; retry on another rank';
import { endSse, sendSse, startSse } from './sse.js';

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** OpenAI finish_reason; an aborted request never reaches the client. */
export type OpenAiFinish = 'stop' | 'length';

export interface ResponseFormat {
  /**
   * A streamed chunk carrying text and/or the finish reason; `first` is the first chunk of
   * the stream; `usage` is the usage so far with continuous usage stats, else null.
   */
  chunk(text: string, finish: OpenAiFinish | null, first: boolean, usage: Usage | null): object;
  /** The final usage-only chunk (choices: []). */
  usageChunk(usage: Usage): object;
  /** The whole non-streamed response. */
  full(text: string, finish: OpenAiFinish, usage: Usage): object;
}

function usageOf(prompt: number, completion: number): Usage {
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

function openAiFinish(reason: FinishReason): OpenAiFinish {
  return reason === 'length' ? 'length' : 'stop';
}

/** Aborts the request when the client goes away before the response is complete. */
function abortOnDisconnect(req: IncomingMessage, res: ServerResponse, handle: RequestHandle): void {
  res.on('close', () => {
    if (!res.writableFinished) handle.abort();
  });
  req.on('aborted', () => handle.abort());
}

/** What a streamed response reports about usage. */
export interface StreamUsage {
  /** A final usage-only chunk (stream_options.include_usage). */
  include: boolean;
  /** The usage so far in every chunk (stream_options.continuous_usage_stats, with include). */
  continuous: boolean;
  /** Tokens of the prompt. */
  promptTokens: number;
}

export async function streamGeneration(req: IncomingMessage, res: ServerResponse, handle: RequestHandle, fmt: ResponseFormat, usage: StreamUsage): Promise<void> {
  abortOnDisconnect(req, res, handle);
  startSse(res);
  let first = true;
  let generated = 0;
  const soFar = (): Usage | null => (usage.continuous ? usageOf(usage.promptTokens, generated) : null);
  for await (const ev of handle.events) {
    if (ev.type === 'delta') {
      generated += ev.tokenIds.length;
      if (ev.text.length === 0 && !first) continue;
      sendSse(res, fmt.chunk(ev.text, null, first, soFar()));
      first = false;
    } else if (ev.type === 'done') {
      if (ev.finishReason === 'abort') {
        // The client is gone (the write is a no-op) or the server is stopping (tell the client).
        sendSse(res, new ApiError(503, 'service_unavailable', ABORTED, 'aborted').toJSON());
        break;
      }
      generated = ev.completionTokens;
      sendSse(res, fmt.chunk('', openAiFinish(ev.finishReason), first, soFar()));
      if (usage.include) sendSse(res, fmt.usageChunk(usageOf(ev.promptTokens, ev.completionTokens)));
    } else {
      sendSse(res, fromServingError(ev.error).toJSON());
    }
  }
  endSse(res);
}

/** The full response; throws ApiError when the request was aborted or failed. */
export async function collectGeneration(req: IncomingMessage, res: ServerResponse, handle: RequestHandle, fmt: ResponseFormat): Promise<object | null> {
  abortOnDisconnect(req, res, handle);
  let text = '';
  for await (const ev of handle.events) {
    if (ev.type === 'delta') text += ev.text;
    else if (ev.type === 'done') {
      if (ev.finishReason === 'abort') throw new ApiError(503, 'service_unavailable', ABORTED, 'aborted');
      return fmt.full(text, openAiFinish(ev.finishReason), usageOf(ev.promptTokens, ev.completionTokens));
    } else throw ev.error;
  }
  return null;
}
