/**
 * The front router's request log, as agents report it and the console shows it: one record
 * per client request (the newest REQUEST_LOG_CAPACITY of an agent), a summary pushed as it
 * ends and its bodies fetched on demand. Probes (/health, /metrics) and CORS preflights are
 * not logged. Headers are never recorded, so an API key cannot appear in the log.
 */
import { z } from 'zod';

/** Records an agent keeps (the newest). */
export const REQUEST_LOG_CAPACITY = 500;
/** Characters of a body kept: the first REQUEST_BODY_HEAD_CHARS and the last REQUEST_BODY_TAIL_CHARS. */
export const REQUEST_BODY_HEAD_CHARS = 48 * 1024;
export const REQUEST_BODY_TAIL_CHARS = 16 * 1024;

const count = z.int().nonnegative();

/** One request as the log lists it. */
export const requestSummarySchema = z.object({
  /** Id in the agent's log: increasing, unique while the agent runs. */
  id: count,
  /** When the router received the request, Unix epoch ms. */
  startedAtMs: z.number().nonnegative(),
  /** HTTP method. */
  method: z.string(),
  /** Path without its query, e.g. "/v1/chat/completions". */
  endpoint: z.string(),
  /** The model the request named, else the one its response named; null when neither did. */
  model: z.string().nullable(),
  /** Whether the response was an event stream (SSE). */
  stream: z.boolean(),
  /** HTTP status sent to the client; null when the client left before any. */
  status: z.int().nullable(),
  /** Prompt (input) tokens from the response's usage; null when it reported none. */
  promptTokens: count.nullable(),
  /** Generated (output) tokens from the response's usage; null when it reported none. */
  completionTokens: count.nullable(),
  /** From the request's arrival to the first streamed event carrying output, ms; null when not a stream or none came. */
  ttftMs: z.number().nonnegative().nullable(),
  /** From the request's arrival to the end of its response, ms. */
  durationMs: z.number().nonnegative(),
  /** The choices' finish_reason (several joined by ","), or a Responses API response's status; null when none. */
  finishReason: z.string().nullable(),
  /** Index of the serving rank (the router's backend) it went to last; null when it went to none (refused at the router). */
  backend: count.nullable(),
  /** What went wrong, in words (an error body's message, a stream broken off, a client that left); null when nothing. */
  error: z.string().nullable(),
  /**
   * Prefill/decode disaggregation: where its prompt was prefilled (the answering rank's
   * x-afd-* headers; one entry per prompt, prefillRank null for a prompt prefilled on the
   * attention rank; transport: tcp, or peer for KV copied from the prefill rank's memory, null
   * when not told); absent when no prompt went to a prefill rank.
   */
  pd: z
    .array(
      z.object({
        prefillRank: count.nullable(),
        kvBytes: count.nullable(),
        transferMs: z.number().nonnegative().nullable(),
        prefillMs: z.number().nonnegative().nullable(),
        transport: z.enum(['peer', 'tcp']).nullable().optional(),
      }),
    )
    .optional(),
});
export type RequestSummary = z.infer<typeof requestSummarySchema>;

/** One request with its bodies. */
export const requestDetailSchema = requestSummarySchema.extend({
  /** The request body as received (UTF-8); a longer one keeps its head and tail around a note of what was left out. */
  requestBody: z.string(),
  /** Size of the whole request body, bytes. */
  requestBytes: count,
  /** The response body as sent (a stream's events as relayed), kept like the request's. */
  responseBody: z.string(),
  /** Size of the whole response body, bytes. */
  responseBytes: count,
  /** A stream's generated text, assembled from the events kept; null when not a stream. */
  responseText: z.string().nullable(),
  /** False when the bodies were dropped to keep the log's memory bounded (the newest requests keep theirs). */
  bodiesKept: z.boolean(),
});
export type RequestDetail = z.infer<typeof requestDetailSchema>;
