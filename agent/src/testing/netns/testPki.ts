/**
 * A throwaway certificate authority for the test bed, made with openssl: one CA, and a
 * server certificate per host signed by it (subjectAltName = the host name and its
 * address), plus a second, unrelated CA that a "wrong CA" test trusts instead. Keys are
 * P-256, valid for two days, written with mode 0600.
 */
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { mustRun, systemRunner, type CommandRunner } from './commandRunner.js';

export interface HostCert {
  cert: string;
  key: string;
}

export interface TestPki {
  /** PEM of the CA that signed every host certificate. */
  caFile: string;
  /** PEM of another CA that signed nothing here (for wrong-CA errors). */
  otherCaFile: string;
  /** Server certificate and key per host name. */
  hosts: Map<string, HostCert>;
}

async function makeCa(runner: CommandRunner, dir: string, name: string): Promise<{ cert: string; key: string }> {
  const key = join(dir, `${name}.key`);
  const cert = join(dir, `${name}.crt`);
  await mustRun(runner, 'openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', key, '-out', cert, '-days', '2', '-subj', `/CN=${name}`,
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  chmodSync(key, 0o600);
  return { cert, key };
}

/** Makes the CA, the other CA and one certificate per host in `dir`. */
export async function makeTestPki(dir: string, hosts: readonly { name: string; address: string }[], runner: CommandRunner = systemRunner): Promise<TestPki> {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const ca = await makeCa(runner, dir, 'afd-test-ca');
  const other = await makeCa(runner, dir, 'afd-other-ca');
  const out = new Map<string, HostCert>();
  for (const h of hosts) {
    const key = join(dir, `${h.name}.key`);
    const csr = join(dir, `${h.name}.csr`);
    const cert = join(dir, `${h.name}.crt`);
    const ext = join(dir, `${h.name}.ext`);
    writeFileSync(ext, `subjectAltName=DNS:${h.name},IP:${h.address}\nbasicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n`);
    await mustRun(runner, 'openssl', ['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', csr, '-subj', `/CN=${h.name}`]);
    chmodSync(key, 0o600);
    await mustRun(runner, 'openssl', ['x509', '-req', '-in', csr, '-CA', ca.cert, '-CAkey', ca.key, '-CAcreateserial', '-out', cert, '-days', '2', '-extfile', ext]);
    out.set(h.name, { cert, key });
  }
  return { caFile: ca.cert, otherCaFile: other.cert, hosts: out };
}
