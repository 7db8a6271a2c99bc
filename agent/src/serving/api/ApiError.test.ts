import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ServingError } from '../ServingError.js';
import { ApiError, toApiError } from './ApiError.js';

describe('error mapping', () => {
  it('maps serving errors to OpenAI statuses and types', () => {
    const cases: [ServingError['kind'], number, string][] = [
      ['context_length_exceeded', 400, 'invalid_request_error'],
      ['invalid_request', 400, 'invalid_request_error'],
      ['queue_full', 429, 'rate_limit_error'],
      ['not_ready', 503, 'service_unavailable'],
      ['step_failed', 503, 'service_unavailable'],
      ['engine_error', 500, 'server_error'],
      ['client_closed', 499, 'client_closed_request'],
    ];
    for (const [kind, status, type] of cases) {
      const e = toApiError(new ServingError(kind, 'msg', 'prompt'));
      expect([e.status, e.type, e.code, e.param]).toEqual([status, type, kind, 'prompt']);
    }
  });

  it('turns zod errors into a 400 naming each field', () => {
    const r = z.object({ a: z.number(), b: z.string() }).safeParse({ a: 'x' });
    const e = toApiError(r.error);
    expect(e.status).toBe(400);
    expect(e.message).toMatch(/a: .*; b: /);
    expect(e.param).toBe('a');
  });

  it('wraps unknown errors as 500 and serialises the OpenAI shape', () => {
    const e = toApiError(new Error('boom'));
    expect(e.status).toBe(500);
    expect(e.toJSON()).toEqual({ error: { message: 'internal error: boom', type: 'server_error', param: null, code: null } });
    const same = ApiError.badRequest('x');
    expect(toApiError(same)).toBe(same);
  });
});
