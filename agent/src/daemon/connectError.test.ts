/**
 * describeAgentConnectError: the sentence for each way a connection fails. The TLS cases
 * use real handshakes against a local https server with a certificate from a throwaway CA
 * (openssl), so the codes are the ones Node really reports.
 */
import { createServer, type Server } from 'node:https';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTestPki, type TestPki } from '../testing/netns/testPki.js';
import { describeAgentConnectError } from './connectError.js';

const dir = mkdtempSync(join(tmpdir(), 'afd-connect-error-'));
let pki: TestPki;
let server: Server;
let port = 0;

beforeAll(async () => {
  pki = await makeTestPki(dir, [{ name: 'localhost', address: '127.0.0.1' }]);
  const host = pki.hosts.get('localhost')!;
  server = createServer({ cert: readFileSync(host.cert), key: readFileSync(host.key) }, (_req, res) => res.end());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  rmSync(dir, { recursive: true, force: true });
});

/** The error a ws client gets for `url` with these TLS settings. */
function failure(url: string, ca?: string): Promise<Error & { code?: string }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, { handshakeTimeout: 5000, ...(ca ? { ca: readFileSync(ca) } : {}) });
    ws.once('error', (e) => resolve(e as Error & { code?: string }));
    ws.once('unexpected-response', () => resolve(new Error('got an HTTP answer')));
  });
}

describe('describeAgentConnectError', () => {
  it('says to pass the CA when the certificate is signed by an untrusted one', async () => {
    const url = `wss://localhost:${port}`;
    const err = await failure(url, pki.otherCaFile);
    expect(describeAgentConnectError(url, err)).toMatch(new RegExp(`agent at ${url} presented a TLS certificate that no CA this client trusts has signed \\(\\w+\\): pass the CA .* with --ca-file`));
    const noCa = await failure(url);
    expect(describeAgentConnectError(url, noCa)).toMatch(/no CA this client trusts/);
  });

  it('names a certificate for another host', async () => {
    // The same certificate (for localhost and 127.0.0.1) served on another loopback address.
    const host = pki.hosts.get('localhost')!;
    const other = createServer({ cert: readFileSync(host.cert), key: readFileSync(host.key) }, (_req, res) => res.end());
    await new Promise<void>((r) => other.listen(0, '127.0.0.2', () => r()));
    const url = `wss://127.0.0.2:${(other.address() as AddressInfo).port}`;
    const err = await failure(url, pki.caFile);
    other.closeAllConnections();
    await new Promise((r) => other.close(r));
    expect(err.code).toBe('ERR_TLS_CERT_ALTNAME_INVALID');
    expect(describeAgentConnectError(url, err)).toMatch(/certificate for another name .*127\.0\.0\.2/);
  });

  it('tells a plain ws:// client of a TLS agent to use wss://', async () => {
    const url = `ws://localhost:${port}`;
    expect(describeAgentConnectError(url, await failure(url))).toMatch(/use wss:\/\//);
  });

  it('explains refused, unknown and unreachable hosts', () => {
    const e = (code: string, message = code): Error & { code: string } => Object.assign(new Error(message), { code });
    expect(describeAgentConnectError('ws://h:1', e('ECONNREFUSED'))).toMatch(/refused the connection: is `afd-agent serve` running there/);
    expect(describeAgentConnectError('ws://h:1', e('ENOTFOUND'))).toMatch(/cannot be resolved \(ENOTFOUND\): check the host name/);
    expect(describeAgentConnectError('ws://h:1', e('EHOSTUNREACH'))).toMatch(/is unreachable \(EHOSTUNREACH\): the host is down/);
    expect(describeAgentConnectError('ws://h:1', new Error('Opening handshake has timed out'))).toMatch(/did not complete the connection in time/);
    expect(describeAgentConnectError('ws://h:1', e('CERT_HAS_EXPIRED'))).toMatch(/expired: renew it/);
    expect(describeAgentConnectError('ws://h:1', new Error('something else'))).toBe('cannot reach the agent at ws://h:1: something else');
  });
});
