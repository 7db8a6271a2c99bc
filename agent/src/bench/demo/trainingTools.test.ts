/**
 * tools/demo-model's Python against the agent: its unit tests, the tokenizer_config.json
 * and chat template it writes (rendered by our jinja path exactly as its trainer renders
 * chats), and the checkpoint layout its exporter writes (loaded by our checkpoint layer
 * and engine). The exporter part needs torch and skips without it.
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildLoadSpec } from '@afd/native/checkpoint';
import { Engine } from '@afd/native';
import { buildStepPlan } from '@afd/shared';
import { TextTokenizer } from '../../serving/tokenizer/TextTokenizer.js';
import { byteLevelTokenizerJson, python } from './testing.js';

const tmp = await mkdtemp(join(tmpdir(), 'afd-demo-tools-'));
afterAll(() => rm(tmp, { recursive: true, force: true }));

/** A python3 that has torch (Debian's python3-torch installs for /usr/bin/python3), or null. */
function pythonWithTorch(): string | null {
  for (const p of ['python3', '/usr/bin/python3']) {
    if (spawnSync(p, ['-c', 'import torch'], { stdio: 'ignore' }).status === 0) return p;
  }
  return null;
}
const torchPython = pythonWithTorch();

describe('tools/demo-model', () => {
  it('its Python unit tests pass', () => {
    const r = python(['-m', 'unittest', 'discover', '-s', 'tests'], torchPython ? { python: torchPython } : {});
    expect(r.stderr).toMatch(/\nOK( \(skipped=\d+\))?\n?$/);
    expect(r.status).toBe(0);
  });

  it('writes a tokenizer_config.json whose chat template our tokenizer renders exactly like the trainer', async () => {
    const chats = [
      [{ role: 'user', content: 'What is a lighthouse?' }],
      [
        { role: 'system', content: 'You are a helpful assistant.' },
        { role: 'user', content: 'Hello!' },
        { role: 'assistant', content: 'Hello! Ask me what a word means.' },
        { role: 'user', content: 'What does "benevolent" mean? é' },
      ],
    ];
    const script = [
      'import json, sys, corpus_io',
      'from trainlib import tok',
      'chats = json.loads(sys.argv[1])',
      'print(json.dumps({"config": tok.tokenizer_config(2048), "pattern": tok.SPLIT_PATTERN,',
      '  "train": [corpus_io.render_chat(c) for c in chats], "prompt": [corpus_io.render_chat(c, add_generation_prompt=True) for c in chats]}))',
    ].join('\n');
    const r = python(['-c', script, JSON.stringify(chats)]);
    expect(r.stderr).toBe('');
    const out = JSON.parse(r.stdout) as { config: Record<string, unknown>; pattern: string; train: string[]; prompt: string[] };
    const tokenizer = TextTokenizer.fromJson(byteLevelTokenizerJson(out.pattern), out.config);
    expect(tokenizer.eosTokenId).toBe(2);
    chats.forEach((c, i) => {
      expect(tokenizer.chatTemplate!.render(c, { addGenerationPrompt: false })).toBe(out.train[i]);
      expect(tokenizer.chatTemplate!.render(c, { addGenerationPrompt: true })).toBe(out.prompt[i]);
      const ids = tokenizer.encodeChat(c, { addGenerationPrompt: true });
      expect(ids[0]).toBe(1); // <|im_start|> matched as one special token
      expect(tokenizer.decode(ids, false)).toBe(out.prompt[i]);
    });
    expect(tokenizer.encode(' a a', false)).toEqual([3 + 256, 3 + 256]);
  });

  it.runIf(torchPython !== null)('exports fused transformers-5 experts as a sharded hub checkpoint that our loader and engine read', async () => {
    const dir = join(tmp, 'export');
    const script = [
      'import json, os, sys, torch',
      'from trainlib import export, hf_model',
      'dims = {"hidden": 48, "heads": 4, "kv_heads": 2, "head_dim": 12, "layers": 3, "dense_layers": [0], "dense_intermediate": 64,',
      '        "experts": 5, "top_k": 2, "moe_intermediate": 16, "max_positions": 256, "aux_loss_coef": 0.01}',
      'cfg = hf_model.config_dict(dims, 96, [2, 0], 0)',
      'out = sys.argv[1]; os.makedirs(out, exist_ok=True)',
      'hf_model.write_json(os.path.join(out, "config.json"), cfg)',
      'g = torch.Generator().manual_seed(0); r = lambda *s: torch.randn(*s, generator=g) * 0.1',
      'H, I, E, D = 48, 16, 5, 64',
      'st = {"model.embed_tokens.weight": r(96, H), "model.norm.weight": 1 + r(H)}',
      'st["lm_head.weight"] = st["model.embed_tokens.weight"]',
      'for l in range(3):',
      '    p = f"model.layers.{l}."',
      '    st.update({p + "input_layernorm.weight": 1 + r(H), p + "post_attention_layernorm.weight": 1 + r(H),',
      '        p + "self_attn.q_proj.weight": r(48, H), p + "self_attn.k_proj.weight": r(24, H), p + "self_attn.v_proj.weight": r(24, H),',
      '        p + "self_attn.o_proj.weight": r(H, 48), p + "self_attn.q_norm.weight": 1 + r(12), p + "self_attn.k_norm.weight": 1 + r(12)})',
      '    if l == 0:',
      '        st.update({p + "mlp.gate_proj.weight": r(D, H), p + "mlp.up_proj.weight": r(D, H), p + "mlp.down_proj.weight": r(H, D)})',
      '    else:',
      '        st.update({p + "mlp.gate.weight": r(E, H), p + "mlp.experts.gate_up_proj": r(E, 2 * I, H), p + "mlp.experts.down_proj": r(E, H, I)})',
      't = export.hub_tensors(st, H, I, tied=True)',
      'files = export.write_checkpoint(out, t, max_shard_bytes=12_000)',
      'pick = ["model.layers.1.mlp.experts.3.up_proj.weight", "model.layers.2.mlp.experts.0.down_proj.weight", "model.embed_tokens.weight"]',
      'print(json.dumps({"files": files, "values": {k: t[k].float().flatten()[:5].tolist() for k in pick},',
      '  "up3": st["model.layers.1.mlp.experts.gate_up_proj"][3, I:].to(torch.bfloat16).float().flatten()[:5].tolist()}))',
    ].join('\n');
    const r = python(['-c', script, dir], { python: torchPython! });
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { files: string[]; values: Record<string, number[]>; up3: number[] };
    expect(out.files.filter((f) => f.endsWith('.safetensors')).length).toBeGreaterThan(1);
    expect(out.files).toContain('model.safetensors.index.json');
    expect(out.values['model.layers.1.mlp.experts.3.up_proj.weight']).toEqual(out.up3); // up = second half of gate_up_proj

    const { spec } = await buildLoadSpec(dir, 'colocated');
    expect(spec.config.tieWordEmbeddings).toBe(true);
    expect(spec.config.moeLayers).toEqual([false, true, true]);
    expect(spec.config.eosTokenIds).toEqual([2, 0]);
    for (const [name, want] of Object.entries(out.values)) {
      const t = spec.tensors.find((x) => x.name === name)!;
      const buf = await readFile(spec.files[t.file]!);
      const got = Array.from({ length: 5 }, (_, i) => new Float32Array(new Uint32Array([buf.readUInt16LE(t.offset + 2 * i) << 16]).buffer)[0]!);
      expect(got, name).toEqual(want);
    }
    const engine = await Engine.load(dir, { threads: 1, kvBlockSize: 16, numKvBlocks: 8 });
    try {
      const res = await engine.step(buildStepPlan([{ tokenIds: [5, 9, 11], numCached: 0, blockTable: [0] }], { returnLogits: true }));
      expect(res.logits!.length).toBe(96);
      expect(res.logits!.every(Number.isFinite)).toBe(true);
    } finally {
      engine.close();
    }
  });
});
