/**
 * `afd-bench two-hosts`: what a slow link between the FFN host and the attention host
 * costs a decode step. Builds the namespace bed (agent/src/testing/netns: two hosts with
 * TLS agents, a console namespace), puts the delaying relay between the hosts on the AFD
 * ports, launches 2A2F with `afd-agent launch` (FFN ranks on host-a, attention ranks on
 * host-b, CPU backend), then streams greedy completions at one-way delay 0 and at
 * --delay-ms, reading the serving attention rank's mean step time from /afd/stats. Writes
 * the JSON report (twoHostsReport.ts) to --json-out and a summary to stdout. Needs root and
 * `ip netns` (the bed is torn down at the end, also on failure).
 */
import type { Command } from 'commander';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { tmpdir } from 'node:os';
import { ensureTinyModel } from '../model/defaultModel.js';
import { netnsSupport } from '../testing/netns/netnsSupport.js';
import { startCliLaunch, stopCliLaunch } from '../testing/netns/bedClients.js';
import { measureDelay } from '../testing/netns/latency.js';
import { TwoHostBed } from '../testing/netns/TwoHostBed.js';
import { intFlag } from '../util/intFlag.js';
import { gitCommit } from './cliArgs.js';
import { formatTwoHosts, twoHostsReport } from './twoHostsReport.js';
import { agentEnv } from '../util/env.js';

/** AFD_NATIVE_ADDON passed on to the bed's agents when set (an unset variable stays unset). */
function nativeAddonEnv(): NodeJS.ProcessEnv {
  const addon = agentEnv().nativeAddon;
  return addon === undefined ? {} : { AFD_NATIVE_ADDON: addon };
}

interface TwoHostsFlags {
  delayMs: string;
  tokens: string;
  repeats: string;
  afdPort: string;
  jsonOut?: string;
  agentScript?: string;
  modelsHome?: string;
}

export function registerTwoHostsBench(program: Command): void {
  program
    .command('two-hosts')
    .description('2A2F across two network-namespace hosts with a delaying relay between them: the decode step slowdown per ms of one-way delay (root)')
    .option('--delay-ms <ms>', 'one-way delay between the hosts', '2')
    .option('--tokens <n>', 'tokens per measured stream', '96')
    .option('--repeats <n>', 'measured streams per delay, interleaved (median)', '5')
    .option('--afd-port <n>', 'AFD rendezvous base port', '29500')
    .option('--json-out <file>', 'write the JSON report here')
    .option('--agent-script <file>', 'afd-agent.cjs to run on the hosts (default: next to this afd-bench.cjs)')
    .option('--models-home <dir>', 'folder whose models/ holds (or gets) the built-in model (default: a temp folder)')
    .action(async (f: TwoHostsFlags) => {
      const support = await netnsSupport();
      if (!support.ok) throw new Error(`two-hosts needs network namespaces: ${support.reason}`);
      const delayMs = Number(f.delayMs);
      if (!(delayMs > 0 && delayMs <= 1000)) throw new Error(`--delay-ms must be in (0, 1000], got "${f.delayMs}"`);
      const tokens = intFlag('--tokens', f.tokens, 8, 4096);
      const repeats = intFlag('--repeats', f.repeats, 1, 50);
      const afdPort = intFlag('--afd-port', f.afdPort, 1, 65534);
      const benchScript = process.argv[1]!;
      const agentScript = f.agentScript ?? join(dirname(benchScript), 'afd-agent.cjs');
      const modelsHome = f.modelsHome ?? join(tmpdir(), 'afd-two-hosts-models');
      await ensureTinyModel(modelsHome);
      const two = await TwoHostBed.start({ agentScript, benchScript, modelsHome, env: nativeAddonEnv() });
      try {
        const relay = await two.startRelay('host-a', [afdPort, afdPort + 1], 0);
        const launch = await startCliLaunch(two, agentScript, ['--topology', '2A2F', '--api-port', '8000', '--afd-port', String(afdPort)]);
        try {
          const api = launch.routers.get('host-b:7700');
          if (!api) throw new Error(`no front router on host-b in the launch summary:\n${launch.cli.tail()}`);
          const attention = launch.ranks.filter((r) => r.role === 'attention');
          const { baseline, delayed } = await measureDelay(two, relay, api, attention, { delayMs, tokens, repeats });
          const layers = delayed.wireUsPerLayer.length;
          const report = twoHostsReport({
            topology: '2A2F',
            placement: 'world: FFN ranks on host-a, attention ranks on host-b',
            backend: 'cpu',
            model: 'tiny-qwen3-moe (built-in)',
            layers,
            tokensPerRun: tokens,
            repeats,
            baseline,
            delayed,
            notes: [
              'delay: a TCP relay on the bed\'s switch between the hosts on the AFD ports (netem is not available); the baseline runs through the same relay at 0 ms, interleaved with the delayed runs',
              'stepMs: mean engine step time of the attention rank that served the stream (/afd/stats), batch 1 decode',
              'wireUsPerLayer: F->A wire time per layer at the attention rank: one-way (the bed\'s namespaces share one kernel clock; TcpLink stamps each frame), half the round trip less the FFN rank\'s hold between real hosts',
            ],
            commit: gitCommit(),
            command: `afd-bench two-hosts ${process.argv.slice(3).join(' ')}`.trim(),
          });
          process.stdout.write(`${formatTwoHosts(report)}\n`);
          if (f.jsonOut) writeFileSync(f.jsonOut, `${JSON.stringify(report, null, 2)}\n`);
        } finally {
          await stopCliLaunch(launch);
        }
      } finally {
        await two.teardown();
      }
    });
}
