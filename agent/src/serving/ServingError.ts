/**
 * Errors the serving layer raises for a request, each with a kind the HTTP layer maps to
 * an OpenAI-style status and type.
 */
export type ServingErrorKind =
  /** Prompt (+ max_tokens) longer than the context window: 400. */
  | 'context_length_exceeded'
  /** Bad request value found after schema validation (e.g. empty prompt): 400. */
  | 'invalid_request'
  /** Too many requests queued: 429. */
  | 'queue_full'
  /** Engine not loaded yet, or an FFN peer is lost: 503. */
  | 'not_ready'
  /**
   * The engine step failed before the request produced a token (e.g. its FFN peer hung
   * past the step deadline): 503. Nothing was generated, so it is safe to retry, and the
   * front router retries it on another rank.
   */
  | 'step_failed'
  /** The engine failed while running the request: 500. */
  | 'engine_error'
  /** The client closed its connection before the request ran (nginx's 499; nobody reads it). */
  | 'client_closed';

export class ServingError extends Error {
  constructor(
    readonly kind: ServingErrorKind,
    message: string,
    /** The request field at fault, when there is one. */
    readonly param: string | null = null,
  ) {
    super(message);
    this.name = 'ServingError';
  }
}

/**
 * The error of a request whose engine step failed with `cause`: retryable (step_failed,
 * 503) while the request has produced no token, else engine_error (500; its tokens may
 * already have been streamed, so it cannot be retried unseen).
 */
export function stepFailureError(cause: string, producedTokens: boolean): ServingError {
  if (producedTokens) return new ServingError('engine_error', `engine step failed: ${cause}`);
  return new ServingError('step_failed', `engine step failed: ${cause}; it failed before this request produced a token, so nothing was generated: retry it (the front router retries it on another rank)`);
}
