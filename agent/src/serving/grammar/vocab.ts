/**
 * The vocabulary xgrammar's TokenizerInfo needs, read from a Hugging Face tokenizer.json:
 * every token's encoded string by id, and how those strings spell bytes.
 *
 *   - byte_level: GPT-2-style BPE (Qwen, Llama 3, DeepSeek): every byte is a printable
 *     stand-in character ("Ġ" for a space); the decoder is ByteLevel;
 *   - byte_fallback: SentencePiece BPE (Llama 2, Mistral): "▁" for a space, "<0x0A>" for a
 *     byte the vocabulary has no piece for; the decoder has ByteFallback;
 *   - raw: tokens are their own text.
 *
 * The model prepends a space to the text (SentencePiece's prefix space) when the normaliser
 * prepends "▁" or the pre-tokenizer is a Metaspace that prepends always or first.
 *
 * Special added tokens (special: true, e.g. <|im_start|>) get the empty string: xgrammar
 * treats those as special and never allows them inside a grammar. The model's stop tokens
 * are given separately (they end the output where the grammar may end). Non-special added
 * tokens (e.g. Qwen's <think>) keep their text. Ids with no token get "" too.
 */

export type VocabType = 'byte_level' | 'byte_fallback' | 'raw';

export interface GrammarVocab {
  /** Encoded token strings by id (length = highest id + 1). */
  tokens: string[];
  vocabType: VocabType;
  /** The tokenizer prepends a space to the text it encodes. */
  prependSpace: boolean;
}

interface Node {
  type?: unknown;
  decoders?: unknown;
  normalizers?: unknown;
  prepend?: unknown;
  prepend_scheme?: unknown;
  add_prefix_space?: unknown;
}

/** The node and, for a Sequence, its parts. */
function parts(node: unknown, key: 'decoders' | 'normalizers'): Node[] {
  if (typeof node !== 'object' || node === null) return [];
  const n = node as Node;
  if (n.type === 'Sequence' && Array.isArray(n[key])) return n[key] as Node[];
  return [n];
}

/** byte_level / byte_fallback from the decoder (the first one found), else raw. */
export function vocabTypeOf(tokenizerJson: Record<string, unknown>): VocabType {
  for (const d of parts(tokenizerJson['decoder'], 'decoders')) {
    if (d.type === 'ByteLevel') return 'byte_level';
    if (d.type === 'ByteFallback') return 'byte_fallback';
  }
  return 'raw';
}

/** True when the tokenizer prepends a space (SentencePiece's "▁") to the text. */
export function prependsSpace(tokenizerJson: Record<string, unknown>): boolean {
  if (parts(tokenizerJson['normalizer'], 'normalizers').some((n) => n.type === 'Prepend' && n.prepend === '▁')) return true;
  const pre = tokenizerJson['pre_tokenizer'] as Node | null | undefined;
  if (!pre || pre.type !== 'Metaspace') return false;
  return pre.prepend_scheme === 'always' || pre.prepend_scheme === 'first' || (pre.prepend_scheme === undefined && pre.add_prefix_space === true);
}

interface AddedToken {
  id: number;
  content: string;
  special?: boolean;
}

/** Encoded token strings by id: model.vocab (a {token: id} map, or Unigram's [[piece, score], ...]) and added_tokens. */
export function grammarVocabOf(tokenizerJson: Record<string, unknown>): GrammarVocab {
  const model = tokenizerJson['model'] as { vocab?: unknown } | undefined;
  const tokens: string[] = [];
  const vocab = model?.vocab;
  if (Array.isArray(vocab)) {
    vocab.forEach((entry, id) => (tokens[id] = Array.isArray(entry) ? String(entry[0]) : String(entry)));
  } else if (typeof vocab === 'object' && vocab !== null) {
    for (const [token, id] of Object.entries(vocab as Record<string, number>)) tokens[id] = token;
  } else {
    throw new Error('tokenizer.json has no model.vocab; structured outputs need the vocabulary');
  }
  const added = (tokenizerJson['added_tokens'] ?? []) as AddedToken[];
  for (const t of added) tokens[t.id] = t.special ? '' : t.content;
  for (let id = 0; id < tokens.length; id++) tokens[id] ??= '';
  return { tokens, vocabType: vocabTypeOf(tokenizerJson), prependSpace: prependsSpace(tokenizerJson) };
}
