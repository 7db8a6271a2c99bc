/**
 * OpenAI-style JSON errors: `{"error": {"message", "type", "param", "code"}}` with the
 * HTTP status an OpenAI client maps to the right exception class.
 */
import type { z } from 'zod';
import type { ServingError } from '../ServingError.js';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    /** OpenAI error type, e.g. invalid_request_error. */
    readonly type: string,
    message: string,
    /** Machine-readable code, e.g. model_not_found. */
    readonly code: string | null = null,
    /** The request field at fault. */
    readonly param: string | null = null,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  toJSON(): { error: { message: string; type: string; param: string | null; code: string | null } } {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }

  static badRequest(message: string, param: string | null = null, code: string | null = null): ApiError {
    return new ApiError(400, 'invalid_request_error', message, code, param);
  }
}

/** A zod failure as a 400 naming every bad field. */
export function fromZodError(err: z.ZodError): ApiError {
  const issues = err.issues.map((i) => `${i.path.length ? i.path.join('.') : 'body'}: ${i.message}`);
  const head = err.issues[0];
  // An unknown field is named in `param` (its path and key), like any other bad field.
  const key = head?.code === 'unrecognized_keys' ? head.keys[0] : undefined;
  const first = [...(head?.path ?? []), ...(key === undefined ? [] : [key])].join('.') || null;
  return ApiError.badRequest(`invalid request: ${issues.join('; ')}`, first, 'invalid_type');
}

const servingStatus: Record<ServingError['kind'], [number, string]> = {
  context_length_exceeded: [400, 'invalid_request_error'],
  invalid_request: [400, 'invalid_request_error'],
  queue_full: [429, 'rate_limit_error'],
  not_ready: [503, 'service_unavailable'],
  step_failed: [503, 'service_unavailable'],
  engine_error: [500, 'server_error'],
  client_closed: [499, 'client_closed_request'],
};

export function fromServingError(err: ServingError): ApiError {
  const [status, type] = servingStatus[err.kind];
  return new ApiError(status, type, err.message, err.kind, err.param);
}

/** Anything thrown by a handler as an ApiError (unknown errors become 500 with their message). */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof Error && err.name === 'ServingError') return fromServingError(err as ServingError);
  if (err instanceof Error && err.name === 'ZodError') return fromZodError(err as z.ZodError);
  return new ApiError(500, 'server_error', `internal error: ${err instanceof Error ? err.message : String(err)}`);
}
