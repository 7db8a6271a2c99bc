import { describe, expect, it } from 'vitest';
import { checkBindPolicy, checkRouterBindPolicy, isLoopbackHost } from './bindPolicy.js';
import { checkUpgrade, presentedToken } from './upgradeAuth.js';

describe('bind policy', () => {
  it('recognises loopback addresses', () => {
    for (const h of ['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]', '::ffff:127.0.0.1', '0:0:0:0:0:0:0:1']) {
      expect(isLoopbackHost(h), h).toBe(true);
    }
    for (const h of ['0.0.0.0', '::', '10.0.0.5', '192.168.1.2', 'gpu-node-1', '128.0.0.1', '::2']) {
      expect(isLoopbackHost(h), h).toBe(false);
    }
  });

  it('allows loopback always and non-loopback only with TLS', () => {
    expect(() => checkBindPolicy({ host: '127.0.0.1', hasTls: false })).not.toThrow();
    expect(() => checkBindPolicy({ host: '0.0.0.0', hasTls: true })).not.toThrow();
    expect(() => checkBindPolicy({ host: '0.0.0.0', hasTls: false })).toThrow(/non-loopback address 0\.0\.0\.0 without TLS \(--tls-cert and --tls-key\)/);
    expect(() => checkBindPolicy({ host: '10.1.1.1', hasTls: false })).toThrow(/bind to 127\.0\.0\.1/);
  });

  it('serves the OpenAI API off loopback only with an API key', () => {
    expect(() => checkRouterBindPolicy('127.0.0.1', undefined)).not.toThrow();
    expect(() => checkRouterBindPolicy('0.0.0.0', 'k')).not.toThrow();
    expect(() => checkRouterBindPolicy('0.0.0.0', undefined)).toThrow(/non-loopback address 0\.0\.0\.0 without an API key.*--api-key \(or set AFD_API_KEY\)/);
  });
});

describe('upgrade checks', () => {
  const token = 'T'.repeat(40);
  const policy = { token, allowedOrigins: ['http://127.0.0.1:5173/'] };

  it('reads the token from a Bearer header or the token subprotocol', () => {
    expect(presentedToken({ headers: { authorization: `Bearer ${token}` } })).toBe(token);
    expect(presentedToken({ headers: { 'sec-websocket-protocol': `afd.v1, afd.token.${token}` } })).toBe(token);
    expect(presentedToken({ headers: {}, url: `/?token=${token}` })).toBe(token);
    expect(presentedToken({ headers: {} })).toBeUndefined();
  });

  it('accepts the right token without Origin or with an allowed Origin', () => {
    expect(checkUpgrade({ headers: { authorization: `Bearer ${token}` } }, policy)).toEqual({ ok: true });
    expect(checkUpgrade({ headers: { authorization: `Bearer ${token}`, origin: 'http://127.0.0.1:5173' } }, policy)).toEqual({ ok: true });
  });

  it('refuses a missing or wrong token (401) and a foreign Origin (403)', () => {
    expect(checkUpgrade({ headers: {} }, policy)).toMatchObject({ ok: false, status: 401, reason: /missing/ });
    expect(checkUpgrade({ headers: { authorization: 'Bearer nope' } }, policy)).toMatchObject({ ok: false, status: 401, reason: /wrong/ });
    expect(checkUpgrade({ headers: { authorization: `Bearer ${token}`, origin: 'https://evil.example' } }, policy)).toMatchObject({
      ok: false,
      status: 403,
      reason: /--allow-origin/,
    });
  });
});
