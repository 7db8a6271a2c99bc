/**
 * Streams or collects the generations of one request (one per prompt; a completions batch
 * has several) as an OpenAI response. The endpoint supplies how a chunk and a full response
 * look; this file owns SSE, usage and client disconnects (a closed connection aborts every
 * generation of the request, which frees their KV blocks). When one generation fails or is
 * aborted, the others are aborted and the request gets that error.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestHandle } from '../ServingEngine.js';
import { ApiError, fromServingError } from './ApiError.js';
import { openAiFinish, sumUsage, usageOf, type ChoiceDelta, type FinishedChoice, type ResponseFormat, type Usage } from './responseFormat.js';
import { endSse, sendSse, startSse } from './sse.js';

export const ABORTED = 'the request was aborted because the server is stopping; retry on another rank';

/** A choice's share of the request's usage: the n samples of a prompt count it (and its cached tokens) once, with sample 0. */
function usageShare(handle: RequestHandle, done: { promptTokens: number; completionTokens: number; cachedTokens: number }): Usage {
  const first = handle.sampleIndex === 0;
  return usageOf(first ? done.promptTokens : 0, done.completionTokens, first ? done.cachedTokens : 0);
}

/** Sends what a format made of a delta: one chunk, several, or none. */
function sendChunks(res: ServerResponse, chunks: object | object[] | null): boolean {
  if (chunks === null) return false;
  for (const c of Array.isArray(chunks) ? chunks : [chunks]) sendSse(res, c);
  return !Array.isArray(chunks) || chunks.length > 0;
}

/** Aborts every generation when the client goes away before the response is complete. */
export function abortOnDisconnect(req: IncomingMessage, res: ServerResponse, handles: RequestHandle[]): void {
  const abortAll = (): void => handles.forEach((h) => h.abort());
  res.on('close', () => {
    if (!res.writableFinished) abortAll();
  });
  req.on('aborted', abortAll);
}

/** What a streamed response reports about usage. */
export interface StreamUsage {
  /** A final usage-only chunk, summed over the prompts (stream_options.include_usage). */
  include: boolean;
  /** The usage so far of its choice in every chunk (stream_options.continuous_usage_stats, with include). */
  continuous: boolean;
}

/**
 * Streams every generation, each chunk carrying the choice index of its prompt; the usage
 * chunk and `[DONE]` come once, after the last generation finished.
 */
export async function streamGeneration(req: IncomingMessage, res: ServerResponse, handles: RequestHandle[], fmt: ResponseFormat, usage: StreamUsage): Promise<void> {
  abortOnDisconnect(req, res, handles);
  startSse(res);
  const finished: Usage[] = [];
  let failed = false;
  /** Sends the error once and ends the other generations. */
  const fail = (error: object): void => {
    failed = true;
    sendSse(res, error);
    for (const h of handles) h.abort(); // a no-op for those already ended
  };
  const streamOne = async (handle: RequestHandle, index: number): Promise<void> => {
    let first = true;
    let generated = 0;
    const soFar = (): Usage | null => (usage.continuous ? usageOf(handle.promptTokens, generated) : null);
    for await (const ev of handle.events) {
      if (failed) break;
      if (ev.type === 'delta') {
        generated += ev.tokenIds.length;
        if (ev.text.length === 0 && !first && !fmt.everyToken) continue;
        if (sendChunks(res, fmt.chunk(index, deltaOf(ev), null, first, soFar()))) first = false;
      } else if (ev.type === 'done') {
        // Aborted: the client is gone (the write is a no-op) or the server is stopping (tell the client).
        if (ev.finishReason === 'abort') return fail(new ApiError(503, 'service_unavailable', ABORTED, 'aborted').toJSON());
        generated = ev.completionTokens;
        sendChunks(res, fmt.chunk(index, { text: '', tokenIds: [] }, openAiFinish(ev.finishReason), first, soFar()));
        finished.push(usageShare(handle, ev));
      } else return fail(fromServingError(ev.error).toJSON());
    }
  };
  await Promise.all(handles.map(streamOne));
  if (!failed && usage.include) sendSse(res, fmt.usageChunk(sumUsage(finished)));
  endSse(res);
}

/** A delta event as a chunk's delta (optional fields only when present). */
function deltaOf(ev: { text: string; tokenIds: number[]; logprobs?: ChoiceDelta['logprobs']; promptLogprobs?: ChoiceDelta['promptLogprobs'] }): ChoiceDelta {
  const d: ChoiceDelta = { text: ev.text, tokenIds: ev.tokenIds };
  if (ev.logprobs) d.logprobs = ev.logprobs;
  if (ev.promptLogprobs) d.promptLogprobs = ev.promptLogprobs;
  return d;
}

/** One generation's text, tokens, logprobs and finish reason; throws when it was aborted or failed, null when its events ended early. */
export async function collectOne(handle: RequestHandle): Promise<(FinishedChoice & { usage: Usage }) | null> {
  let text = '';
  const tokenIds: number[] = [];
  let logprobs: FinishedChoice['logprobs'] = null;
  let promptLogprobs: FinishedChoice['promptLogprobs'] = null;
  for await (const ev of handle.events) {
    if (ev.type === 'delta') {
      text += ev.text;
      tokenIds.push(...ev.tokenIds);
      if (ev.logprobs) (logprobs ??= []).push(...ev.logprobs);
      if (ev.promptLogprobs) promptLogprobs = ev.promptLogprobs;
    } else if (ev.type === 'done') {
      if (ev.finishReason === 'abort') throw new ApiError(503, 'service_unavailable', ABORTED, 'aborted');
      return { text, finish: openAiFinish(ev.finishReason), tokenIds, logprobs, promptLogprobs, usage: usageShare(handle, ev) };
    } else throw ev.error;
  }
  return null;
}

/** The full response, choices in prompt order; throws ApiError when a generation was aborted or failed. */
export async function collectGeneration(req: IncomingMessage, res: ServerResponse, handles: RequestHandle[], fmt: ResponseFormat): Promise<object | null> {
  abortOnDisconnect(req, res, handles);
  let results: Awaited<ReturnType<typeof collectOne>>[];
  try {
    results = await Promise.all(handles.map(collectOne));
  } catch (err) {
    for (const h of handles) h.abort(); // the first failure fails the request: stop the rest
    throw err;
  }
  const choices = results.filter((c) => c !== null);
  if (choices.length < handles.length) return null;
  return fmt.full(choices, sumUsage(choices.map((c) => c.usage)));
}
