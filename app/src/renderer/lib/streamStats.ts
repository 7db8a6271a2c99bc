/**
 * Per-message generation stats from token arrival times. Times are milliseconds since
 * the request was sent, measured where the stream is read (the console service).
 */
import { percentile } from '../../common/percentile.js';

/** What the Playground keeps with every finished (or stopped) message. */
export interface MessageStats {
  /** Time to first token, ms; undefined when no token arrived. */
  ttftMs: number | undefined;
  /** Output tokens after the first divided by the time they took, tokens/s. */
  decodeTokensPerSecond: number | undefined;
  /** Mean gap between consecutive tokens, ms. */
  meanItlMs: number | undefined;
  /** 95th percentile of the gaps, ms. */
  p95ItlMs: number | undefined;
  /** Output tokens (the server's usage count when it reported one). */
  numOutputTokens: number;
  /** Prompt tokens as reported by the server. */
  numPromptTokens: number | undefined;
  /** Wall time from send to the last byte, ms. */
  totalMs: number;
}

export interface StreamTiming {
  /** Arrival time of each streamed chunk that carried text, ms since send. */
  chunkTimesMs: readonly number[];
  /** Completion tokens from the usage block, when the server sent one. */
  usageCompletionTokens?: number | undefined;
  usagePromptTokens?: number | undefined;
  /** Time the stream ended, ms since send. */
  endMs: number;
}

export function computeMessageStats(t: StreamTiming): MessageStats {
  const times = t.chunkTimesMs;
  const first = times[0];
  const last = times[times.length - 1];
  const numOutputTokens = t.usageCompletionTokens ?? times.length;
  let decodeTokensPerSecond: number | undefined;
  let meanItlMs: number | undefined;
  let p95ItlMs: number | undefined;
  if (first !== undefined && last !== undefined && numOutputTokens > 1 && last > first) {
    const decodeMs = last - first;
    decodeTokensPerSecond = ((numOutputTokens - 1) * 1000) / decodeMs;
    meanItlMs = decodeMs / (numOutputTokens - 1);
    const gaps: number[] = [];
    for (let i = 1; i < times.length; i++) gaps.push((times[i] ?? 0) - (times[i - 1] ?? 0));
    gaps.sort((a, b) => a - b);
    p95ItlMs = percentile(gaps, 95);
  }
  return {
    ttftMs: first,
    decodeTokensPerSecond,
    meanItlMs,
    p95ItlMs,
    numOutputTokens,
    numPromptTokens: t.usagePromptTokens,
    totalMs: t.endMs,
  };
}

/** Stage of a running request as the user sees it. */
export type RequestStage = 'queued' | 'prefill' | 'decode' | 'done';

/**
 * queued until the server accepted the request (response headers), prefill until the
 * first token, decode afterwards.
 */
export function requestStage(accepted: boolean, numChunks: number, finished: boolean): RequestStage {
  if (finished) return 'done';
  if (!accepted) return 'queued';
  return numChunks === 0 ? 'prefill' : 'decode';
}
