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
