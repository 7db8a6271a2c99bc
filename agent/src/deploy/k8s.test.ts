/**
 * Parses deploy/k8s the way Kubernetes does (YAML 1.1: 0400 is octal) and checks the fields
 * that matter for the agent: GPU nodes and device-plugin resources, the token from a
 * Secret (mode the agent accepts), TLS for the non-loopback bind, readiness on /health,
 * and that the kustomization and the serve flags agree with the agent's own options.
 */
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { Command } from 'commander';
import { registerServe } from '../cli/commands/serve.js';

const dir = fileURLToPath(new URL('../../../deploy/k8s/', import.meta.url));

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [key: string]: unknown;
}

function load(file: string): K8sObject[] {
  const docs = parseAllDocuments(readFileSync(join(dir, file), 'utf8'), { version: '1.1' });
  return docs.map((d) => {
    if (d.errors.length > 0) throw new Error(`${file}: ${d.errors.map((e) => e.message).join('; ')}`);
    return d.toJS() as K8sObject;
  });
}

/* eslint-disable @typescript-eslint/no-explicit-any -- manifests are untyped JSON trees */
const kustomization = load('kustomization.yaml')[0] as any;
const resources: K8sObject[] = (kustomization.resources as string[]).flatMap(load);
const ds = resources.find((r) => r.kind === 'DaemonSet') as any;
const pod = ds.spec.template.spec;
const agent = pod.containers.find((c: any) => c.name === 'agent');
const volume = (name: string): any => pod.volumes.find((v: any) => v.name === name);
const mountOf = (name: string): any => agent.volumeMounts.find((m: any) => m.name === name);
/* eslint-enable @typescript-eslint/no-explicit-any */

function flagValue(flag: string): string | undefined {
  const arg = (agent.args as string[]).find((a) => a.startsWith(`${flag}=`));
  return arg?.slice(flag.length + 1);
}

describe('deploy/k8s', () => {
  it('lists a Namespace, the DaemonSet and a headless Service, all in namespace afd', () => {
    expect(resources.map((r) => r.kind).sort()).toEqual(['DaemonSet', 'Namespace', 'Service']);
    for (const r of resources.filter((x) => x.kind !== 'Namespace')) expect(r.metadata.namespace).toBe('afd');
    const svc = resources.find((r) => r.kind === 'Service') as unknown as { spec: { clusterIP: string; selector: Record<string, string> } };
    expect(svc.spec.clusterIP).toBe('None');
    expect(svc.spec.selector).toEqual(ds.spec.selector.matchLabels);
  });

  it('selects its own pods and runs only on GPU nodes, tolerating the GPU taint', () => {
    expect(ds.apiVersion).toBe('apps/v1');
    for (const [k, v] of Object.entries(ds.spec.selector.matchLabels)) expect(ds.spec.template.metadata.labels[k]).toBe(v);
    expect(pod.nodeSelector['nvidia.com/gpu.present']).toBe('true');
    expect(pod.tolerations).toContainEqual(expect.objectContaining({ key: 'nvidia.com/gpu', operator: 'Exists' }));
  });

  it('requests GPUs through the device plugin resource', () => {
    const gpus = agent.resources.limits['nvidia.com/gpu'];
    expect(Number.isInteger(gpus) && gpus > 0).toBe(true);
  });

  it('runs `serve` on a non-loopback address with TLS and the token from a Secret', () => {
    expect(agent.args[0]).toBe('serve');
    expect(flagValue('--host')).toBe('0.0.0.0');
    const tokenFile = flagValue('--token-file')!;
    const cert = flagValue('--tls-cert')!;
    const key = flagValue('--tls-key')!;
    expect(tokenFile.startsWith(`${mountOf('token').mountPath}/`)).toBe(true);
    expect(cert.startsWith(`${mountOf('tls').mountPath}/`)).toBe(true);
    expect(key.startsWith(`${mountOf('tls').mountPath}/`)).toBe(true);
    expect(volume('token').secret.secretName).toBe('afd-agent-token');
    expect(volume('tls').secret.secretName).toBe('afd-agent-tls');
    // The agent refuses token files readable by group/others: the Secret must be mounted 0400/0600.
    expect(volume('token').secret.defaultMode & 0o077).toBe(0);
    expect(mountOf('token').readOnly).toBe(true);
    // The token never appears on the command line or in the environment.
    expect(JSON.stringify(agent.args)).not.toMatch(/--token(=| )/);
    expect(JSON.stringify(agent.env ?? [])).not.toMatch(/TOKEN/i);
  });

  it('probes readiness on the agent port over HTTPS at /health', () => {
    const port = Number(flagValue('--port'));
    expect(agent.ports).toContainEqual(expect.objectContaining({ name: 'agent', containerPort: port }));
    for (const probe of [agent.readinessProbe, agent.livenessProbe]) {
      expect(probe.httpGet).toMatchObject({ path: '/health', port: 'agent', scheme: 'HTTPS' });
    }
  });

  it('uses host networking (ranks are reached by other nodes) and gives ranks time to stop', () => {
    expect(pod.hostNetwork).toBe(true);
    expect(pod.dnsPolicy).toBe('ClusterFirstWithHostNet');
    const graceMs = Number(flagValue('--stop-grace-ms'));
    expect(pod.terminationGracePeriodSeconds * 1000).toBeGreaterThan(graceMs * 2);
  });

  it('documents both Secrets with the keys the DaemonSet mounts', () => {
    const secrets = load('secrets.example.yaml');
    const token = secrets.find((s) => s.metadata.name === 'afd-agent-token') as unknown as { stringData: Record<string, string> };
    const tls = secrets.find((s) => s.metadata.name === 'afd-agent-tls') as unknown as { type: string; stringData: Record<string, string> };
    expect(Object.keys(token.stringData)).toContain(flagValue('--token-file')!.split('/').pop());
    expect(tls.type).toBe('kubernetes.io/tls');
    expect(Object.keys(tls.stringData).sort()).toEqual(['tls.crt', 'tls.key']);
  });

  it('passes only flags that `afd-agent serve` defines', () => {
    const program = new Command();
    registerServe(program);
    const serve = program.commands.find((c) => c.name() === 'serve')!;
    const known = new Set(serve.options.map((o) => o.long));
    for (const arg of (agent.args as string[]).slice(1)) expect(known.has(arg.split('=')[0]), arg).toBe(true);
  });
});
