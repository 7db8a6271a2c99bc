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
import { byteLevelTokenizerJson, python } from '../../testing/demoModelTools.js';

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

  it.runIf(torchPython !== null)('exports the trained model as a sharded hub checkpoint that our loader reads and our engine computes equally', async () => {
    const dir = join(tmp, 'export');
    const script = [
      'import json, os, sys, torch',
      'from trainlib import export, fast_moe, hf_model',
      'dims = {"hidden": 48, "heads": 4, "kv_heads": 2, "head_dim": 12, "layers": 3, "dense_layers": [0], "dense_intermediate": 64,',
      '        "experts": 5, "top_k": 2, "moe_intermediate": 16, "max_positions": 256, "aux_loss_coef": 0.01}',
      'cfg = hf_model.config_dict(dims, 96, [2, 0], 0)',
      'out = sys.argv[1]; os.makedirs(out, exist_ok=True)',
      'hf_model.write_json(os.path.join(out, "config.json"), cfg)',
      'm = fast_moe.FastQwen3Moe(cfg); fast_moe.init_weights(m, 3, 0)',
      'with torch.no_grad():',
      '    for p in m.parameters():',
      '        p.mul_(8) if p.dim() > 1 else p.add_(0.1 * torch.randn(p.shape, generator=torch.Generator().manual_seed(1)))',
      't = m.hub_tensors()',
      'files = export.write_checkpoint(out, t, max_shard_bytes=12_000)',
      'with torch.no_grad():',
      '    logits = fast_moe.bf16_rounded(m)(torch.tensor([[5, 9, 11]]))[0][0, -1].tolist()',
      'pick = ["model.layers.1.mlp.experts.3.up_proj.weight", "model.layers.2.mlp.experts.0.down_proj.weight", "model.embed_tokens.weight"]',
      'print(json.dumps({"files": files, "values": {k: t[k].float().flatten()[:5].tolist() for k in pick},',
      '  "up3": m.model.layers[1].mlp.experts.up_proj[3].to(torch.bfloat16).float().flatten()[:5].tolist(), "logits": logits}))',
    ].join('\n');
    const r = python(['-c', script, dir], { python: torchPython! });
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { files: string[]; values: Record<string, number[]>; up3: number[]; logits: number[] };
    expect(out.files.filter((f) => f.endsWith('.safetensors')).length).toBeGreaterThan(1);
    expect(out.files).toContain('model.safetensors.index.json');
    expect(out.values['model.layers.1.mlp.experts.3.up_proj.weight']).toEqual(out.up3); // expert 3's up_proj, split out of the stack

    const { spec } = await buildLoadSpec(dir, 'colocated');
    expect(spec.config.tieWordEmbeddings).toBe(true);
    expect(spec.config.layers.map((l) => l.ffn)).toEqual(['dense', 'moe', 'moe']);
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
      // our engine on the checkpoint = the training model (fp32 on the bf16 weights)
      const diff = Math.hypot(...Array.from(res.logits!, (v, i) => v - out.logits[i]!));
      expect(diff / Math.hypot(...out.logits)).toBeLessThan(1e-5);
    } finally {
      engine.close();
    }
  });
});
