/**
 * A real checkpoint whose reply to any chat is a chosen text, made from the tiny Qwen3-MoE
 * that `afd-agent make-model` writes, with weights that make it a lookup table:
 *
 * - every attention output projection and expert down projection is zero, so each layer
 *   adds nothing and the final hidden state is the current token's embedding;
 * - the embedding of the reply's k-th token is the unit vector e_k, every other token's is
 *   e_(H-1) (the start: the prompt's last token is one of those);
 * - the final norm is 1 and the (untied) LM head maps e_k to the (k+1)-th token (e_(H-1)
 *   to the first, the last to EOS) with a logit of 10 * sqrt(H) against 0 for every other
 *   token, so greedy and any sampling temperature pick it.
 *
 * The reply's tokens must be distinct (each has one successor). Under a grammar that bans
 * the scripted token, every allowed token ties at 0, so greedy picks the lowest allowed id.
 * Nothing here fakes the serving path: ranks load and run this checkpoint like any other.
 * The e2e suite (e2e/support/scriptedModel.ts) and agent integration tests share it.
 */
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';

interface TensorEntry {
  dtype: string;
  shape: number[];
  data_offsets: [number, number];
}

const BF16_ONE = 0x3f80;
const BF16_TEN = 0x4120;

function readSafetensors(path: string): { header: Record<string, TensorEntry>; data: Buffer } {
  const all = readFileSync(path);
  const n = Number(all.readBigUInt64LE(0));
  const header = JSON.parse(all.subarray(8, 8 + n).toString('utf8')) as Record<string, TensorEntry>;
  delete (header as Record<string, unknown>)['__metadata__'];
  return { header, data: all.subarray(8 + n) };
}

function writeSafetensors(path: string, tensors: { name: string; shape: number[]; bytes: Buffer }[]): void {
  const header: Record<string, unknown> = { __metadata__: { format: 'pt' } };
  let offset = 0;
  for (const t of tensors) {
    header[t.name] = { dtype: 'BF16', shape: t.shape, data_offsets: [offset, offset + t.bytes.length] };
    offset += t.bytes.length;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(Buffer.byteLength(json)));
  writeFileSync(path, Buffer.concat([len, Buffer.from(json, 'utf8'), ...tensors.map((t) => t.bytes)]));
}

/** The token ids of `text` as the model's tokenizer splits it (no special tokens). */
function tokenize(dir: string, text: string): number[] {
  const tok = new Tokenizer(JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8')) as object, JSON.parse(readFileSync(join(dir, 'tokenizer_config.json'), 'utf8')) as object);
  return tok.encode(text, { add_special_tokens: false }).ids;
}

/** Writes into `dir` the scripted checkpoint answering `reply`, made from the make-model tiny Qwen3-MoE in `base`. */
export function writeScriptedCheckpoint(base: string, dir: string, reply: string): void {
  const config = JSON.parse(readFileSync(join(base, 'config.json'), 'utf8')) as { hidden_size: number; vocab_size: number; eos_token_id: number };
  const H = config.hidden_size;
  const V = config.vocab_size;
  const ids = tokenize(base, reply);
  if (new Set(ids).size !== ids.length) throw new Error(`scripted reply ${JSON.stringify(reply)} repeats a token; pick text whose tokens are all distinct`);
  if (ids.length >= H) throw new Error(`scripted reply has ${ids.length} tokens; at most ${H - 1} fit`);
  const start = H - 1;
  const { header, data } = readSafetensors(join(base, 'model.safetensors'));
  const tensors: { name: string; shape: number[]; bytes: Buffer }[] = [];
  for (const [name, e] of Object.entries(header).sort((a, b) => a[1].data_offsets[0] - b[1].data_offsets[0])) {
    let bytes = Buffer.from(data.subarray(e.data_offsets[0], e.data_offsets[1]));
    if (/\.self_attn\.o_proj\.weight$|\.down_proj\.weight$/.test(name)) bytes = Buffer.alloc(bytes.length);
    if (name === 'model.norm.weight') for (let i = 0; i < H; i++) bytes.writeUInt16LE(BF16_ONE, 2 * i);
    if (name === 'model.embed_tokens.weight') {
      bytes = Buffer.alloc(V * H * 2);
      for (let v = 0; v < V; v++) bytes.writeUInt16LE(BF16_ONE, 2 * (v * H + start));
      ids.forEach((id, k) => {
        bytes.writeUInt16LE(0, 2 * (id * H + start));
        bytes.writeUInt16LE(BF16_ONE, 2 * (id * H + k));
      });
    }
    tensors.push({ name, shape: e.shape, bytes });
  }
  const head = Buffer.alloc(V * H * 2);
  const next = [...ids, config.eos_token_id];
  head.writeUInt16LE(BF16_TEN, 2 * (next[0]! * H + start));
  for (let k = 0; k < ids.length; k++) head.writeUInt16LE(BF16_TEN, 2 * (next[k + 1]! * H + k));
  tensors.push({ name: 'lm_head.weight', shape: [V, H], bytes: head });
  mkdirSync(dir, { recursive: true });
  writeSafetensors(join(dir, 'model.safetensors'), tensors);
  writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...config, tie_word_embeddings: false }, null, 2));
  for (const f of ['generation_config.json', 'tokenizer.json', 'tokenizer_config.json']) copyFileSync(join(base, f), join(dir, f));
}
