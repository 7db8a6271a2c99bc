/**
 * Test helper: a synthetic tokenizer in the shape of DeepSeek-V2/V3's (no DeepSeek
 * tokenizer file is available offline): byte-level BPE with DeepSeek's split
 * pre-tokenizers, its full-width-bar special tokens, a BOS-adding TemplateProcessing,
 * and a chat template built from the constructs DeepSeek's templates use (namespace
 * with attribute sets, system-prompt gathering, tool calls, `in` / `not in` / `is none`
 * tests, `.split('</think>')[-1]`, whitespace control).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** DeepSeek's special tokens, in id order from 0 (the base vocabulary follows). */
export const deepseekSpecialTokens = [
  '<｜begin▁of▁sentence｜>',
  '<｜end▁of▁sentence｜>',
  '<｜User｜>',
  '<｜Assistant｜>',
  '<｜tool▁calls▁begin｜>',
  '<｜tool▁calls▁end｜>',
  '<｜tool▁call▁begin｜>',
  '<｜tool▁call▁end｜>',
  '<｜tool▁sep｜>',
  '<｜tool▁outputs▁begin｜>',
  '<｜tool▁outputs▁end｜>',
  '<｜tool▁output▁begin｜>',
  '<｜tool▁output▁end｜>',
] as const;

export const deepseekChatTemplate = [
  "{% if not add_generation_prompt is defined %}{% set add_generation_prompt = false %}{% endif %}",
  "{% set ns = namespace(is_first=false, is_tool=false, system_prompt='', is_first_sp=true) %}",
  "{%- for message in messages %}{%- if message['role'] == 'system' %}",
  "{%- if ns.is_first_sp %}{% set ns.system_prompt = ns.system_prompt + message['content'] %}{% set ns.is_first_sp = false %}",
  "{%- else %}{% set ns.system_prompt = ns.system_prompt + '\\n\\n' + message['content'] %}{%- endif %}",
  '{%- endif %}{%- endfor %}',
  '{{ bos_token }}{{ ns.system_prompt }}',
  '{%- for message in messages %}',
  "{%- if message['role'] == 'user' %}{%- set ns.is_tool = false -%}{{ '<｜User｜>' + message['content'] }}{%- endif %}",
  "{%- if message['role'] == 'assistant' and 'tool_calls' in message %}{%- set ns.is_tool = false -%}",
  "{%- for tool in message['tool_calls'] %}",
  "{%- if not ns.is_first %}{%- if message['content'] is none %}{{ '<｜Assistant｜><｜tool▁calls▁begin｜>' }}{%- else %}{{ '<｜Assistant｜>' + message['content'] + '<｜tool▁calls▁begin｜>' }}{%- endif %}{%- set ns.is_first = true -%}{%- endif %}",
  "{{ '<｜tool▁call▁begin｜>' + tool['type'] + '<｜tool▁sep｜>' + tool['function']['name'] + '\\n```json\\n' + tool['function']['arguments'] + '\\n```<｜tool▁call▁end｜>' }}",
  "{%- endfor %}{{ '<｜tool▁calls▁end｜><｜end▁of▁sentence｜>' }}{%- endif %}",
  "{%- if message['role'] == 'assistant' and 'tool_calls' not in message %}",
  "{%- if ns.is_tool %}{{ '<｜tool▁outputs▁end｜>' + message['content'] + '<｜end▁of▁sentence｜>' }}{%- set ns.is_tool = false -%}",
  "{%- else %}{% set content = message['content'] %}{% if '</think>' in content %}{% set content = content.split('</think>')[-1] %}{% endif %}",
  "{{ '<｜Assistant｜>' + content + '<｜end▁of▁sentence｜>' }}{%- endif %}{%- endif %}",
  "{%- if message['role'] == 'tool' %}{%- set ns.is_tool = true -%}{{ '<｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>' + message['content'] + '<｜tool▁output▁end｜>' }}{%- endif %}",
  '{%- endfor -%}',
  "{% if ns.is_tool %}{{ '<｜tool▁outputs▁end｜>' }}{% endif %}",
  "{% if add_generation_prompt and not ns.is_tool %}{{ '<｜Assistant｜>' }}{% endif %}",
].join('');

/** GPT-2's byte-to-unicode map (the byte-level alphabet of DeepSeek's BPE). */
function byteSymbols(): string[] {
  const keep: number[] = [];
  for (let b = 33; b <= 126; b++) keep.push(b);
  for (let b = 161; b <= 172; b++) keep.push(b);
  for (let b = 174; b <= 255; b++) keep.push(b);
  const out = new Array<string>(256);
  let extra = 0;
  for (let b = 0; b < 256; b++) out[b] = String.fromCodePoint(keep.includes(b) ? b : 256 + extra++);
  return out;
}

/** Writes tokenizer.json + tokenizer_config.json into dir. */
export function writeDeepseekTokenizer(dir: string): void {
  const vocab: Record<string, number> = {};
  deepseekSpecialTokens.forEach((t, i) => (vocab[t] = i));
  for (const s of byteSymbols()) vocab[s] = Object.keys(vocab).length;
  // A few merges, so BPE merging is exercised ("Hello", "Ġworld").
  const merges = ['H e', 'l l', 'He ll', 'Hell o', 'Ġ w', 'o r', 'Ġw or', 'l d', 'Ġwor ld'];
  for (const m of merges) vocab[m.replace(' ', '')] = Object.keys(vocab).length;
  const special = (content: string, id: number) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
  const bos = deepseekSpecialTokens[0];
  const tokenizer = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: deepseekSpecialTokens.map((t, i) => special(t, i)),
    normalizer: null,
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [
        { type: 'Split', pattern: { Regex: '\\p{N}{1,3}' }, behavior: 'Isolated', invert: false },
        { type: 'Split', pattern: { Regex: '[一-龥\u3040-ゟ゠-ヿ]+' }, behavior: 'Isolated', invert: false },
        {
          type: 'Split',
          pattern: { Regex: "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+" },
          behavior: 'Isolated',
          invert: false,
        },
        { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false },
      ],
    },
    post_processor: {
      type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: bos, type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
      pair: [{ SpecialToken: { id: bos, type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: bos, type_id: 1 } }, { Sequence: { id: 'B', type_id: 1 } }],
      special_tokens: { [bos]: { id: bos, ids: [0], tokens: [bos] } },
    },
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null, fuse_unk: false, byte_fallback: false, vocab, merges },
  };
  const config = {
    add_bos_token: false,
    add_eos_token: false,
    bos_token: { __type: 'AddedToken', content: bos, lstrip: false, normalized: true, rstrip: false, single_word: false },
    eos_token: { __type: 'AddedToken', content: deepseekSpecialTokens[1], lstrip: false, normalized: true, rstrip: false, single_word: false },
    clean_up_tokenization_spaces: false,
    legacy: true,
    model_max_length: 16384,
    pad_token: { __type: 'AddedToken', content: deepseekSpecialTokens[1], lstrip: false, normalized: true, rstrip: false, single_word: false },
    sp_model_kwargs: {},
    unk_token: null,
    tokenizer_class: 'LlamaTokenizerFast',
    chat_template: deepseekChatTemplate,
  };
  writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(tokenizer));
  writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify(config));
}
