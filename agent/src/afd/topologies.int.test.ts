/**
 * Real role processes on the CPU backend with the built-in tiny model: for every
 * topology, attention and FFN ranks started in mixed order rendezvous, greedy
 * completions sent to several attention ranks at once (so blocks have busy and idle
 * peers, and DBO splits batches) equal the colocated run, and a graceful stop of the
 * attention ranks stops the FFN ranks through the shutdown flag. Each topology runs once,
 * with DBO and the gate placement alternating in the table below; the full
 * topology x DBO x gate matrix runs in-process over real TCP in
 * native/src/comm/afdMatrix.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { resolveTopology } from '@afd/shared';
import { freePortBlock } from '@afd/native/ports';
import { completeOnTwoRanks } from '../testing/rankHttp.js';
import { RoleProcess, stopTopology } from '../testing/RoleProcess.js';
import { useTinyModelSetup } from '../testing/tinyModelSetup.js';

const prompts = [
  [9707, 11, 1879, 0],
  [785, 3974, 13876, 38835],
  [16, 17, 18, 19, 20, 21, 22],
  [3838, 374, 279],
];
const maxTokens = 5;
const setup = useTinyModelSetup({ homePrefix: 'afd-runtime-int-', arch: 'qwen3_moe', reference: { prompts, maxTokens } });
const { home, model } = setup;

// One process case per topology; DBO and the gate placement alternate so that every pair
// of flag values runs as real processes at least once (the in-process matrix runs them all).
const cases = [
  { topology: '1A1F', dbo: false, gate: false },
  { topology: '2A1F', dbo: true, gate: true },
  { topology: '2A2F', dbo: false, gate: true },
  { topology: '3A2F', dbo: true, gate: false },
  { topology: '4A2F', dbo: false, gate: false },
  { topology: '4A4F', dbo: true, gate: true },
];

describe.each(cases)('$topology (dbo $dbo, gate on attention $gate)', ({ topology, dbo, gate }) => {
  it('rendezvous in any order, tokens equal the colocated run, clean shutdown', { timeout: 240_000 }, async () => {
    const topo = resolveTopology(topology);
    const x = topo.attention.ranks;
    const y = topo.ffn.ranks;
    const afdPort = await freePortBlock(y);
    const config = { computeGateOnAttention: gate, stepDeadlineMs: 20_000, dbo: { enabled: dbo, decodeTokenThreshold: 2, prefillTokenThreshold: 2 } };
    // Attention ranks first for half of the FFN ranks: both start orders must work.
    const ffn: RoleProcess[] = [];
    const attn: RoleProcess[] = [];
    for (let f = 0; f < y; f += 2) ffn[f] = await RoleProcess.start({ role: 'ffn', rank: f, topology, afdPort, model, home, config });
    for (let a = x - 1; a >= 0; a--) attn[a] = await RoleProcess.start({ role: 'attention', rank: a, topology, afdPort, model, home, config });
    for (let f = 1; f < y; f += 2) ffn[f] = await RoleProcess.start({ role: 'ffn', rank: f, topology, afdPort, model, home, config });
    const urls = await Promise.all(attn.map((p) => p.ready()));
    await Promise.all(ffn.map((p) => p.ready()));

    for (const r of await completeOnTwoRanks(urls, prompts, maxTokens)) expect(r.text, `prompt ${r.i} on attention rank ${r.rank}`).toBe(setup.reference[r.i]);

    const stats = (await (await fetch(`${await ffn[0]!.ready()}/afd/stats`)).json()) as { steps: number; ffnLoop: { state: string } };
    expect(stats.steps).toBeGreaterThan(0);

    // Graceful stop of the attention ranks: each FFN rank gets the shutdown flag and exits 0.
    await stopTopology(attn, ffn);
    for (const p of [...attn, ...ffn]) expect(p.events.at(-1)?.type).toBe('stopped');
  });
});
