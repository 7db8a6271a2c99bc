/**
 * The Host and Origin rules of siteGuard.ts on request headers alone: which Host names a
 * loopback bind accepts, that a non-loopback bind checks no Host, and which Origins pass
 * (none, allowed, same origin) or get the 403 naming the origin and --allowed-origins.
 */
import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { apiErrorOf } from '../testing/apiErrorOf.js';
import { hostNameOf, isLoopbackHostHeader, SiteGuard } from './siteGuard.js';

const req = (headers: Record<string, string>): IncomingMessage => ({ headers }) as unknown as IncomingMessage;
const noOrigins = (): boolean => false;

describe('Host headers', () => {
  it('takes the name out of host[:port], bracketed IPv6 and a trailing dot', () => {
    expect(['localhost:8000', '[::1]:8000', '[::1]', 'LOCALHOST.', '127.0.0.1', '::1'].map(hostNameOf)).toEqual(['localhost', '::1', '::1', 'localhost', '127.0.0.1', '::1']);
  });

  it('loopback: localhost, *.localhost, 127.0.0.0/8 and ::1, with or without a port', () => {
    for (const h of ['localhost', 'localhost:8000', 'app.localhost:3000', '127.0.0.1:8000', '127.1.2.3', '[::1]:8000', '[::ffff:127.0.0.1]:80', 'Localhost.']) expect(isLoopbackHostHeader(h), h).toBe(true);
    for (const h of ['attacker.example', 'attacker.example:8000', 'localhost.attacker.example', '10.0.0.1:8000', '0.0.0.0:8000', '[::]:8000', 'mylocalhost']) expect(isLoopbackHostHeader(h), h).toBe(false);
  });
});

describe('SiteGuard.checkHost', () => {
  const guard = new SiteGuard({ bindHost: '127.0.0.1', allowsOrigin: noOrigins });

  it('on a loopback bind refuses another name with 403 naming the Host and DNS rebinding', () => {
    const err = apiErrorOf(() => guard.checkHost(req({ host: 'attacker.example:8000' })));
    expect(err.status).toBe(403);
    expect(err.toJSON().error).toMatchObject({ type: 'invalid_request_error', code: 'forbidden_host' });
    expect(err.message).toMatch(/^Host "attacker\.example:8000" is not a loopback name: this server listens on loopback \(127\.0\.0\.1\) .*\(DNS rebinding\); address it as http:\/\/127\.0\.0\.1:<port>/);
    expect(() => guard.checkHost(req({ host: 'localhost:8000' }))).not.toThrow();
    expect(() => guard.checkHost(req({}))).not.toThrow(); // HTTP/1.0 without Host: no browser sends that
  });

  it('checks no Host on a non-loopback bind (a wildcard or a LAN address)', () => {
    for (const bindHost of ['0.0.0.0', '::', '10.0.0.5']) expect(() => new SiteGuard({ bindHost, allowsOrigin: noOrigins }).checkHost(req({ host: 'attacker.example' }))).not.toThrow();
  });
});

describe('SiteGuard.checkOrigin', () => {
  const guard = new SiteGuard({ bindHost: '127.0.0.1', allowsOrigin: (o) => o === 'https://app.example' });

  it('lets through no Origin (curl, SDKs), an allowed one and the server\'s own', () => {
    expect(() => guard.checkOrigin(req({ host: '127.0.0.1:8000' }))).not.toThrow();
    expect(() => guard.checkOrigin(req({ host: '127.0.0.1:8000', origin: 'https://app.example' }))).not.toThrow();
    expect(() => guard.checkOrigin(req({ host: '127.0.0.1:8000', origin: 'http://127.0.0.1:8000' }))).not.toThrow();
    expect(() => guard.checkOrigin(req({ host: 'LOCALHOST:8000', origin: 'http://localhost:8000' }))).not.toThrow();
  });

  it('refuses any other origin, "null" and another port of the same host with 403 naming it and --allowed-origins', () => {
    for (const origin of ['https://attacker.example', 'null', 'http://127.0.0.1:9999']) {
      const err = apiErrorOf(() => guard.checkOrigin(req({ host: '127.0.0.1:8000', origin })));
      expect(err.status, origin).toBe(403);
      expect(err.code).toBe('forbidden_origin');
      expect(err.message).toBe(
        `Origin "${origin}" is not allowed: a web page of another site may not send requests to this API (cross-site request forgery); start the server with --allowed-origins '${JSON.stringify([origin])}' to allow it (clients that are not browsers send no Origin)`,
      );
    }
  });
});
