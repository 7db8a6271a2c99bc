/** Test helpers for the demo model's tools: tools/demo-model's Python, and a tokenizer.json laid out as its trainer saves one. */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { repoRoot } from './agentBundle.js';

/** tools/demo-model of this repository. */
export const demoToolDir = join(repoRoot, 'tools/demo-model');

/** Runs python (default python3) in tools/demo-model. */
export function python(args: string[], opts: { python?: string } = {}): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(opts.python ?? 'python3', args, { cwd: demoToolDir, encoding: 'utf8', maxBuffer: 64 << 20 });
  return { status: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? '' };
}

/** The tokenizer_config.json train.py writes (tok.tokenizer_config), and its pre-tokenizer split pattern. */
export function demoTokenizerConfig(): { config: Record<string, unknown>; pattern: string } {
  const r = python(['-c', 'import json; from trainlib import tok; print(json.dumps({"config": tok.tokenizer_config(2048), "pattern": tok.SPLIT_PATTERN}))']);
  if (r.status !== 0) throw new Error(`python3 failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as { config: Record<string, unknown>; pattern: string };
}

/** A byte-level BPE tokenizer.json in the layout tokenizers' trainer saves (train.py's tok.train): specials 0-2, the byte alphabet, one merge. */
export function byteLevelTokenizerJson(splitPattern: string): object {
  const bytes: string[] = [];
  let n = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    bytes.push(printable ? String.fromCharCode(b) : String.fromCharCode(256 + n++));
  }
  const specials = ['<|endoftext|>', '<|im_start|>', '<|im_end|>'];
  const vocab: Record<string, number> = {};
  specials.forEach((t, i) => (vocab[t] = i));
  bytes.forEach((t, i) => (vocab[t] = 3 + i));
  vocab['Ġa'] = 3 + 256;
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: specials.map((content, id) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true })),
    normalizer: { type: 'NFC' },
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [
        { type: 'Split', pattern: { Regex: splitPattern }, behavior: 'Isolated', invert: false },
        { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false },
      ],
    },
    post_processor: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true },
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null, fuse_unk: false, byte_fallback: false, ignore_merges: false, vocab, merges: [['Ġ', 'a']] },
  };
}

