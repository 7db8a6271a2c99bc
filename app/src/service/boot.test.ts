import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebSocketServer } from 'ws';
import { launchSpecSchema } from '@afd/shared';
import { consoleBoot, defaultLaunchSpec } from './boot.js';
import { ConsoleService } from './ConsoleService.js';

/** A stand-in for afd-agent.cjs: announces `url` (and writes its pid), then idles until SIGTERM. */
function fakeAgentScript(dir: string, url: string): string {
  const script = join(dir, 'fake-agent.cjs');
  writeFileSync(
    script,
    `const fs = require('node:fs');
fs.writeFileSync(${JSON.stringify(join(dir, 'token'))}, 'tok');
fs.writeFileSync(${JSON.stringify(join(dir, 'pid'))}, String(process.pid));
console.log(JSON.stringify({ type: 'listening', url: ${JSON.stringify(url)}, tokenFile: ${JSON.stringify(join(dir, 'token'))} }));
setInterval(() => undefined, 1000);
`,
  );
  return script;
}

/** A WebSocket agent that says hello and refuses every request. */
async function refusingAgent(): Promise<{ url: string; server: Server }> {
  const server = createServer();
  const wss = new WebSocketServer({ server });
  wss.on('connection', (ws) => {
    ws.send(JSON.stringify({ type: 'hello', protocolVersion: 1, agentVersion: '0.1.0', hostname: 'fakehost' }));
    ws.on('message', (d) => {
      const { id } = JSON.parse(d.toString()) as { id: string };
      ws.send(JSON.stringify({ type: 'response', id, ok: false, error: { code: 'busy', message: 'not today' } }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

function setup(agentUrl: string): { service: ConsoleService; dir: string; script: string; pushes: string[] } {
  const dir = mkdtempSync(join(tmpdir(), 'afd-boot-'));
  const service = new ConsoleService({ log: () => undefined, connectTimeoutMs: 5000 });
  const pushes: string[] = [];
  service.subscribe((channel) => pushes.push(channel));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }), () => service.dispose());
  return { service, dir, script: fakeAgentScript(dir, agentUrl), pushes };
}

describe('consoleBoot', () => {
  it('after the local agent cannot be added, stops only that agent and keeps the service pushing', async () => {
    const { service, dir, script, pushes } = setup('ws://127.0.0.1:1');
    const boot = consoleBoot(service);
    await expect(boot.start({ agentScript: script })).rejects.toThrow(/refused the connection/);
    expect(alive(Number(readFileSync(join(dir, 'pid'), 'utf8')))).toBe(false);
    expect(pushes).toEqual([]);
    // The console keeps running: an agent added by hand shows up as a push.
    const other = await refusingAgent();
    cleanup.push(() => other.server.close());
    await service.addAgent(other.url, 'tok');
    expect(pushes).toContain('agents.state');
    expect(service.agentInfos().map((a) => a.agentId)).toEqual(['fakehost']);
    await boot.shutdown();
    expect(service.agentInfos()).toEqual([]);
  }, 20_000);

  it('after a failure past addAgent, removes the local agent it added and stops it', async () => {
    const other = await refusingAgent();
    cleanup.push(() => other.server.close());
    const { service, dir, script } = setup(other.url);
    const boot = consoleBoot(service);
    // The refusing agent reports no inventory, so CUDA cannot be chosen.
    await expect(boot.start({ agentScript: script, backend: 'cuda' })).rejects.toThrow(/sees no CUDA device/);
    expect(service.agentInfos()).toEqual([]);
    expect(alive(Number(readFileSync(join(dir, 'pid'), 'utf8')))).toBe(false);
    await boot.shutdown();
  }, 20_000);

  it('shuts down before it started, and then refuses to start', async () => {
    const { service, script } = setup('ws://127.0.0.1:1');
    const boot = consoleBoot(service);
    await boot.shutdown();
    await expect(boot.start({ agentScript: script })).rejects.toThrow(/shutting down/);
  });
});

describe('defaultLaunchSpec', () => {
  it('puts 1A1F on one GPU over connector peer (the agent runs the shared GPU under MPS), and leaves the connector alone otherwise', () => {
    const one = launchSpecSchema.parse(defaultLaunchSpec('1A1F', 'cuda', 1, null, 0));
    expect(one.placements.map((p) => `${p.role}${p.rank}:${p.deviceIndex}`)).toEqual(['ffn0:0', 'attention0:0']);
    expect(one.mode === 'afd' && one.afd.connector).toBe('peer');
    expect(one.gpuSharing.mode).toBe('auto');
    const two = launchSpecSchema.parse(defaultLaunchSpec('1A1F', 'cuda', 2, null, 0));
    expect(two.mode === 'afd' && two.afd.connector).toBe('tcp');
    expect(launchSpecSchema.parse(defaultLaunchSpec('1A1F', 'cpu', 0, null, 0))).toMatchObject({ afd: { connector: 'tcp' } });
  });

  it('restarts a rank that dies (policy on-failure), AFD or colocated', () => {
    expect(launchSpecSchema.parse(defaultLaunchSpec('1A1F', 'cpu', 0, null, 0)).restart.policy).toBe('on-failure');
    expect(launchSpecSchema.parse(defaultLaunchSpec('colocated', 'cpu', 0, null, 0)).restart.policy).toBe('on-failure');
  });
});
