/**
 * The model's tokenizer: tokenizer.json through @huggingface/tokenizers (a maintained
 * pure-JS implementation of HF tokenizers), the chat template from tokenizer_config.json
 * through @huggingface/jinja.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';
import { ChatTemplate, type ChatMessage } from './ChatTemplate.js';
import { SegmentedEncoder } from './SegmentedEncoder.js';
import type { ChatEncodeOptions } from './PromptEncoder.js';
import { maxCharsPerToken } from './promptBound.js';

export interface TokenizerConfigJson {
  chat_template?: string | { name: string; template: string }[];
  eos_token?: string | { content: string } | null;
  bos_token?: string | { content: string } | null;
  [key: string]: unknown;
}

function tokenText(t: TokenizerConfigJson['eos_token']): string | null {
  if (t === undefined || t === null) return null;
  return typeof t === 'string' ? t : t.content;
}

export class TextTokenizer {
  private readonly tokenStrings = new Map<number, string>();
  private addedTokens: Map<number, string> | undefined;
  /** Encodes without special tokens piece by piece, long pieces cached (null where that could change the tokens). */
  private segmented: SegmentedEncoder | null = null;

  private constructor(
    private readonly tokenizer: Tokenizer,
    private readonly config: TokenizerConfigJson,
    /** Chat template; null when the model has none (chat completions are then rejected). */
    readonly chatTemplate: ChatTemplate | null,
    /** Most input characters one token can stand for (see promptBound.ts); null = no bound. */
    readonly maxCharsPerToken: number | null,
  ) {}

  /** Reads tokenizer.json and tokenizer_config.json from a model directory. */
  static async fromDir(dir: string): Promise<TextTokenizer> {
    const read = async (name: string): Promise<unknown> => {
      const path = join(dir, name);
      let text: string;
      try {
        text = await readFile(path, 'utf8');
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        throw new Error(`cannot read ${path} (${code === 'ENOENT' ? 'no such file' : (err as Error).message})`);
      }
      try {
        return JSON.parse(text);
      } catch (err) {
        throw new Error(`${path} is not valid JSON (${(err as Error).message})`);
      }
    };
    // Settle both reads so the error is deterministic and names every missing file.
    const results = await Promise.allSettled([read('tokenizer.json'), read('tokenizer_config.json')]);
    const failures = results.flatMap((r) => (r.status === 'rejected' ? [(r.reason as Error).message] : []));
    if (failures.length > 0) throw new Error(`${failures.join('; ')}: the model directory needs the HF tokenizer files (tokenizer.json, tokenizer_config.json)`);
    const [json, config] = results.map((r) => (r as PromiseFulfilledResult<unknown>).value);
    return TextTokenizer.fromJson(json as object, config as TokenizerConfigJson);
  }

  static fromJson(tokenizerJson: object, config: TokenizerConfigJson): TextTokenizer {
    const tokenizer = new Tokenizer(tokenizerJson, config);
    let source: string | undefined;
    if (typeof config.chat_template === 'string') source = config.chat_template;
    else if (Array.isArray(config.chat_template)) source = (config.chat_template.find((t) => t.name === 'default') ?? config.chat_template[0])?.template;
    const template = source
      ? new ChatTemplate(source, { bos_token: tokenText(config.bos_token) ?? '', eos_token: tokenText(config.eos_token) ?? '' })
      : null;
    const t = new TextTokenizer(tokenizer, config, template, maxCharsPerToken(tokenizerJson));
    t.segmented = SegmentedEncoder.of(tokenizerJson, (piece) => tokenizer.encode(piece, { add_special_tokens: false }).ids);
    return t;
  }

  /** Long pieces found in / added to the piece cache since start (null: this tokenizer tokenises whole texts). */
  pieceCacheStats(): { hits: number; misses: number } | null {
    return this.segmented ? { hits: this.segmented.hits, misses: this.segmented.misses } : null;
  }

  /** Token ids of text; special tokens (e.g. BOS) added per the tokenizer's post-processor when asked. */
  encode(text: string, addSpecialTokens = true): number[] {
    if (!addSpecialTokens && this.segmented) return this.segmented.encode(text); // chats: their repeated history is cached
    return this.tokenizer.encode(text, { add_special_tokens: addSpecialTokens }).ids;
  }

  /** Token ids of a piece of a text, no special tokens, uncached (bounded counting). */
  encodePiece(text: string): number[] {
    return this.tokenizer.encode(text, { add_special_tokens: false }).ids;
  }

  /** The text a chat becomes through the model's template (throws when it has none or it fails). */
  renderChat(messages: ChatMessage[], options: ChatEncodeOptions): string {
    if (!this.chatTemplate) throw new Error('this model has no chat_template in tokenizer_config.json; use /v1/completions');
    return this.chatTemplate.render(messages, options);
  }

  /** Text of token ids; special tokens skipped unless asked. May end in U+FFFD mid-character. */
  decode(ids: readonly number[], skipSpecialTokens = true): string {
    if (ids.length === 0) return '';
    return this.tokenizer.decode(ids as number[], { skip_special_tokens: skipSpecialTokens, clean_up_tokenization_spaces: false });
  }

  /**
   * One token's own string as vLLM shows it in log-probabilities: the token decoded alone,
   * special tokens included (a byte token that is part of a character decodes to U+FFFD).
   * Cached: at most one entry per vocabulary token.
   */
  tokenString(id: number): string {
    let s = this.tokenStrings.get(id);
    if (s === undefined) {
      s = this.decode([id], false);
      this.tokenStrings.set(id, s);
    }
    return s;
  }

  /** The content of an added token (special or not, e.g. <|im_end|>, <think>); undefined for other tokens. */
  addedTokenContent(id: number): string | undefined {
    this.addedTokens ??= new Map([...this.tokenizer.get_added_tokens_decoder()].map(([tid, t]) => [tid, t.content]));
    return this.addedTokens.get(id);
  }

  /** Id of a token string, if the vocabulary has it. */
  tokenId(token: string): number | undefined {
    return this.tokenizer.token_to_id(token);
  }

  /** The vocabulary's string of a token id (e.g. "Ġworld"); undefined when the tokenizer has no such id. */
  vocabString(id: number): string | undefined {
    return this.tokenizer.id_to_token(id);
  }

  /** The EOS token id named in tokenizer_config.json, if any. */
  get eosTokenId(): number | undefined {
    const t = tokenText(this.config.eos_token);
    return t ? this.tokenId(t) : undefined;
  }

  /** Renders a chat with the model's template and tokenizes it (extra special tokens only when asked). */
  encodeChat(messages: ChatMessage[], options: ChatEncodeOptions): number[] {
    return this.encode(this.renderChat(messages, options), options.addSpecialTokens ?? false);
  }
}
