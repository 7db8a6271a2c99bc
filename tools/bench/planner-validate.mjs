#!/usr/bin/env node
/**
 * The planner's validation on this machine (docs/planner.md): measure a cost profile, then
 * each CPU topology with DBO off and on with afd-bench afd-step, and print the predicted
 * vs measured TPOT as a markdown table (and JSON lines with --json).
 *
 *   [AFD_BENCH_CMD='node afd-bench.cjs'] node tools/bench/planner-validate.mjs [--profile FILE] [--topologies 1A1F,2A2F] [--batches 4,16] [--context 256] [--steps 15] [--shared-device cpu:2]
 *
 * --shared-device predicts with the rig's engine threads sharing that device (afd-step's flag).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const { values: o } = parseArgs({
  options: {
    profile: { type: 'string' },
    topologies: { type: 'string', default: '1A1F,2A2F' },
    batches: { type: 'string', default: '4,16' },
    context: { type: 'string', default: '256' },
    steps: { type: 'string', default: '15' },
    'shared-device': { type: 'string' },
    json: { type: 'boolean', default: false },
  },
});

// AFD_BENCH_CMD: how to run afd-bench where there is no npx (a GPU host: "node .../afd-bench.cjs").
const [benchCmd, ...benchPre] = (process.env.AFD_BENCH_CMD ?? 'npx afd-bench').split(' ');

function bench(args) {
  const r = spawnSync(benchCmd, [...benchPre, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  if (r.status !== 0) throw new Error(`afd-bench ${args.join(' ')} exited with ${r.status}`);
  return r.stdout;
}

const profile = o.profile ?? join(mkdtempSync(join(tmpdir(), 'afd-plan-')), 'profile.json');
if (!o.profile) bench(['profile', '--steps', '9', '--out', profile]);
const rows = [];
for (const topology of o.topologies.split(',')) {
  for (const batch of o.batches.split(',')) {
    for (const dbo of [false, true]) {
      const args = ['afd-step', '--topology', topology, '--batch', batch, '--context', o.context, '--steps', o.steps, '--profile', profile, ...(dbo ? ['--dbo'] : []), ...(o['shared-device'] ? ['--shared-device', o['shared-device']] : [])];
      const r = JSON.parse(bench(args).trim().split('\n').at(-1));
      rows.push(r);
      if (o.json) process.stdout.write(`${JSON.stringify(r)}\n`);
    }
  }
}
if (!o.json) {
  process.stdout.write(`profile: ${profile}${o['shared-device'] ? `, predicted on --shared-device ${o['shared-device']}` : ''}\n\n| topology | batch/rank | context | DBO | predicted TPOT ms | measured TPOT ms (p10-p90) | error | within 15% |\n|---|---|---|---|---|---|---|---|\n`);
  for (const r of rows) {
    const err = r.error * 100;
    process.stdout.write(`| ${r.topology} | ${r.batchPerRank} | ${r.context} | ${r.dbo ? 'on' : 'off'} | ${r.predictedTpotMs.toFixed(2)} | ${r.measuredTpotMs.toFixed(2)} (${r.measuredTpotP10Ms.toFixed(2)}-${r.measuredTpotP90Ms.toFixed(2)}) | ${err >= 0 ? '+' : ''}${err.toFixed(1)}% | ${Math.abs(err) <= 15 ? 'yes' : 'no'} |\n`);
  }
}
