import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { LayerSlot, ModelConfigSpec } from '../modelSpec.js';
import { slotsNotYetOnEngine } from '../engineKinds.js';
import { tinyConfigs, tinyHybridConfigs } from '../testing/engineTesting.js';
import { parseModelConfig } from './config.js';
import { familyRowOf, supportedArchitectures } from './families.js';
import { modelTensors } from './tensorTables.js';

const parseAll = (jsons: Record<string, Record<string, unknown>>): Record<string, ModelConfigSpec> =>
  Object.fromEntries(Object.entries(jsons).map(([arch, json]) => [arch, parseModelConfig(`${arch}/config.json`, json)]));
const configs = parseAll(tinyConfigs);
const hybrid = parseAll(tinyHybridConfigs);

/** The slots modelTensors binds in layer `l` (routed experts once, without their index). */
const layerSlots = (c: ModelConfigSpec, l: number): Set<string> => new Set(modelTensors(c).filter((t) => t.layer === l).map((t) => t.slot));

const gqa: LayerSlot[] = ['attn.q_proj', 'attn.k_proj', 'attn.v_proj', 'attn.o_proj'];
const mla: LayerSlot[] = ['attn.kv_a_proj', 'attn.kv_a_norm', 'attn.kv_b_proj', 'attn.o_proj'];
const experts: LayerSlot[] = ['ffn.router', 'ffn.experts.gate_proj', 'ffn.experts.up_proj', 'ffn.experts.down_proj'];
const shared: LayerSlot[] = ['ffn.shared.gate_proj', 'ffn.shared.up_proj', 'ffn.shared.down_proj'];
const dense: LayerSlot[] = ['ffn.gate_proj', 'ffn.up_proj', 'ffn.down_proj'];

describe('the family table', () => {
  it('has a tiny test model for every row', () => {
    // Qwen3_5MoeForCausalLM (the text-only class) shares its readers with the vision-language row.
    const covered = [...Object.values(configs), ...Object.values(hybrid)].map((c) => c.hfArchitecture);
    expect([...covered, 'Qwen3_5MoeForCausalLM'].sort()).toEqual([...supportedArchitectures].sort());
  });

  it('gives the hybrid families their per-layer kinds and binds the gdn / gated slots', () => {
    const kinds = Object.fromEntries(Object.entries(hybrid).map(([arch, c]) => [arch, c.layers.map((l) => `${l.attention} ${l.ffn}`)]));
    expect(kinds).toEqual({
      qwen3_next: ['gdn moe+gated_shared', 'gqa_gated moe+gated_shared', 'gdn dense', 'gqa_gated moe+gated_shared'],
      qwen3_5_moe: ['gdn moe+gated_shared', 'gqa_gated moe+gated_shared', 'gdn moe+gated_shared'],
    });
    for (const c of Object.values(hybrid)) {
      c.layers.forEach((k, l) => {
        const slots = layerSlots(c, l);
        expect(slots.has('attn.conv1d'), `${c.arch} ${l}`).toBe(k.attention === 'gdn');
        expect(slots.has('attn.q_norm'), `${c.arch} ${l}`).toBe(k.attention === 'gqa_gated');
        expect(slots.has('ffn.shared_expert_gate'), `${c.arch} ${l}`).toBe(k.ffn === 'moe+gated_shared');
        expect(slots.has('ffn.shared.up_proj'), `${c.arch} ${l}`).toBe(k.ffn === 'moe+gated_shared');
        expect(slots.has('ffn.gate_proj'), `${c.arch} ${l}`).toBe(k.ffn === 'dense');
      });
    }
    expect(layerSlots(hybrid['qwen3_next']!, 0).has('attn.in_proj_qkvz')).toBe(true);
    expect(layerSlots(hybrid['qwen3_5_moe']!, 0).has('attn.in_proj_qkv')).toBe(true);
  });

  it('gives every layer its kinds and binds exactly the slots of those kinds', () => {
    const kinds = Object.fromEntries(Object.entries(configs).map(([arch, c]) => [arch, c.layers.map((l) => `${l.attention} ${l.ffn}`)]));
    expect(kinds).toEqual({
      qwen3_moe: ['gqa moe', 'gqa dense', 'gqa moe'],
      qwen3: ['gqa dense', 'gqa dense'],
      llama: ['gqa dense', 'gqa dense'],
      mixtral: ['gqa moe', 'gqa moe'],
      deepseek_v2: ['mla dense', 'mla moe+shared', 'mla moe+shared'],
      deepseek_v3: ['mla dense', 'mla moe+shared'],
    });
    for (const c of Object.values(configs)) {
      c.layers.forEach((kinds, l) => {
        const slots = layerSlots(c, l);
        const want = [...(kinds.attention === 'gqa' ? gqa : mla), ...(kinds.ffn === 'dense' ? dense : experts), ...(kinds.ffn === 'moe+shared' ? shared : [])];
        for (const s of want) expect(slots.has(s), `${c.arch} layer ${l} ${s}`).toBe(true);
        const foreign = [...(kinds.attention === 'gqa' ? mla.filter((s) => s !== 'attn.o_proj') : ['attn.k_proj']), ...(kinds.ffn === 'dense' ? experts : dense)];
        for (const s of foreign) expect(slots.has(s), `${c.arch} layer ${l} ${s}`).toBe(false);
        expect(slots.has('ffn.shared.up_proj')).toBe(kinds.ffn === 'moe+shared');
      });
      expect(modelTensors(c).filter((t) => t.expert !== undefined).length).toBe(3 * c.numExperts * c.layers.filter((k) => k.ffn !== 'dense').length);
    }
  });

  it('names every tensor once and binds every slot once', () => {
    for (const c of [...Object.values(configs), ...Object.values(hybrid)]) {
      const tensors = modelTensors(c);
      expect(new Set(tensors.map((t) => t.name)).size, c.arch).toBe(tensors.length);
      expect(new Set(tensors.map((t) => `${t.layer}/${t.slot}/${t.expert}`)).size, c.arch).toBe(tensors.length);
    }
  });

  it('maps slots onto each family checkpoint names (Mixtral: block_sparse_moe, w1 / w3 / w2)', () => {
    const byName = (c: ModelConfigSpec, name: string) => modelTensors(c).find((t) => t.name === name);
    expect(byName(configs['mixtral']!, 'model.layers.1.block_sparse_moe.experts.4.w3.weight')).toMatchObject({ slot: 'ffn.experts.up_proj', layer: 1, expert: 4, owner: 'ffn' });
    expect(byName(configs['mixtral']!, 'model.layers.0.block_sparse_moe.gate.weight')).toMatchObject({ slot: 'ffn.router', layer: 0, owner: 'router' });
    expect(byName(configs['qwen3_moe']!, 'model.layers.2.mlp.experts.5.down_proj.weight')).toMatchObject({ slot: 'ffn.experts.down_proj', layer: 2, expert: 5 });
    expect(byName(configs['deepseek_v3']!, 'model.layers.1.mlp.gate.e_score_correction_bias')).toMatchObject({ slot: 'ffn.router_bias', owner: 'router' });
    expect(byName(configs['deepseek_v3']!, 'model.layers.0.self_attn.q_a_layernorm.weight')).toMatchObject({ slot: 'attn.q_a_norm', owner: 'attention' });
    expect(byName(configs['llama']!, 'model.layers.1.self_attn.o_proj.bias')).toMatchObject({ slot: 'attn.o_bias', layer: 1 });
    expect(byName(configs['llama']!, 'lm_head.weight')).toEqual({ slot: 'lm_head', name: 'lm_head.weight', shape: [57, 36], owner: 'attention', derivation: 'vocab_size, hidden_size' });
  });

  it('uses the slot names the engine binds (native/src/model/slots.h)', () => {
    const header = readFileSync(new URL('../model/slots.h', import.meta.url), 'utf8');
    const native = new Set([...header.matchAll(/inline constexpr char k\w+\[\] = "([^"]+)";/g)].map((m) => m[1]!));
    // The weight store fuses q/k/v rows into these itself; no spec names them.
    const fusedOnly = ['attn.qkv_proj', 'attn.qkv_bias', 'attn.gdn_in_proj'];
    const tableSlots = Object.keys(familyRowOf(configs['qwen3']!).names);
    expect([...tableSlots, ...fusedOnly].filter((s) => !(slotsNotYetOnEngine as readonly string[]).includes(s)).sort()).toEqual([...native].sort());
    // Every slot the engine does not bind yet is in the table (so the list does not go stale the other way).
    for (const s of slotsNotYetOnEngine) expect(tableSlots).toContain(s);
    for (const s of slotsNotYetOnEngine) expect(native.has(s), `${s} is bound by the engine now: drop it from slotsNotYetOnEngine`).toBe(false);
  });
});
