/**
 * What the Playground says when a reply fails, in a sentence a user can act on: where it
 * broke (before the API answered, in its answer's HTTP status, or after the stream had
 * begun) and the API's own words. An error event inside a stream has no HTTP status of
 * its own (the response began 200 OK): it reads "the stream ended: ..." with the error's
 * code, never a made-up status.
 */
import { APIConnectionError, APIError } from 'openai';

/** How far the request had got when it failed. */
export interface ChatErrorContext {
  /** Base URL of the topology API. */
  apiUrl: string;
  /** The API had answered and its stream had begun (the failure came mid-reply). */
  streaming: boolean;
}

/** The API's message and code of an error body ({message, code, type}), when it has them. */
function apiDetail(err: APIError): { message: string; code: string | null } {
  const body = err.error as { message?: unknown; code?: unknown } | undefined;
  const message = typeof body?.message === 'string' && body.message !== '' ? body.message : err.message;
  const code = typeof body?.code === 'string' && body.code !== '' ? body.code : null;
  return { message, code };
}

/** Explains a failed chat or completion request. */
export function describeChatError(err: unknown, ctx: ChatErrorContext): string {
  if (err instanceof APIConnectionError) {
    if (ctx.streaming) return `the stream ended: the connection to the topology API at ${ctx.apiUrl} broke mid-reply (${err.message}); check the Launch screen`;
    return `the topology API at ${ctx.apiUrl} is not reachable (${err.message}); check the Launch screen: is the topology running?`;
  }
  if (err instanceof APIError) {
    const { message, code } = apiDetail(err);
    // An error event in the stream: the SDK gives it no status, and there is none to give.
    if (err.status === undefined) return `the stream ended: ${message}${code ? ` (${code})` : ''}`;
    if (err.status === 400) return `the API rejected the request: ${message}`;
    if (err.status === 503) return `the topology is not ready to serve (${message}); wait for every rank to be ready`;
    return `the API answered HTTP ${err.status}: ${message}`;
  }
  const why = err instanceof Error ? err.message : String(err);
  return ctx.streaming ? `the stream ended: ${why}` : `chat failed: ${why}`;
}

/** Said when a stream closes with neither a finish reason nor an error: the reply is cut short. */
export function truncatedStreamText(numChunks: number): string {
  return `the stream ended before the reply finished: the API closed it after ${numChunks} ${numChunks === 1 ? 'chunk' : 'chunks'} without a finish reason (a rank or the router may have gone away); see the Launch screen`;
}
