/**
 * The multi-turn dataset of `afd-bench serve --dataset-name multi-turn`: one system prompt of
 * `sharedPrefixLen` tokens that every conversation starts with, and `numConversations`
 * conversations of `turns` user messages of `turnInputLen` tokens each. Turn k sends the
 * system prompt, the k-1 turns before (each user message followed by the assistant answer
 * the server streamed back) and the k-th user message, so a prefix cache can serve
 * everything but the newest user message (and the last answer, as far as its text does not
 * tokenize back to the very tokens generated).
 *
 * Token-exact lengths: the texts are random words of the served tokenizer that are one token
 * each with their leading space (" time"), found through the server's POST /tokenize (vLLM's
 * route, which afd serves too); a pre-tokenizer that splits at spaces (BPE of Qwen, Llama 3,
 * DeepSeek) then makes n such words n tokens, and every text is checked with /tokenize
 * before the run. The lengths are the message contents'; the chat template adds its own
 * tokens around them (usage.prompt_tokens counts those too). A server without /tokenize gets
 * the whole word list unchecked (one token a word in the Qwen3 vocabulary, as the random
 * dataset assumes), and the result says so (lengthsChecked: false).
 */
import { WORDS, rng } from './randomPrompts.js';
import { limiter } from './runServeBench.js';

export interface MultiTurnShape {
  /** Tokens of the system prompt all conversations share. */
  sharedPrefixLen: number;
  numConversations: number;
  /** Turns (user messages) per conversation. */
  turns: number;
  /** Tokens of each user message. */
  turnInputLen: number;
  /** max_tokens of each turn. */
  turnOutputLen: number;
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface MultiTurnDataset {
  /** The system prompt every conversation starts with (sharedPrefixLen tokens). */
  systemPrompt: string;
  /** Per conversation, its user messages in order (turnInputLen tokens each). */
  userTurns: string[][];
}

/** `n` words drawn from `words`, each with a leading space. */
export function wordText(n: number, words: readonly string[], next: () => number): string {
  let s = '';
  for (let i = 0; i < n; i++) s += ` ${words[Math.floor(next() * words.length)]!}`;
  return s;
}

/** The dataset of `shape` from `words` (one-token words of the served tokenizer); deterministic per seed. */
export function buildConversations(shape: MultiTurnShape, words: readonly string[], seed: number): MultiTurnDataset {
  if (words.length === 0) throw new Error('no words to build prompts from');
  const next = rng(seed);
  const systemPrompt = wordText(shape.sharedPrefixLen, words, next);
  const userTurns = Array.from({ length: shape.numConversations }, () => Array.from({ length: shape.turns }, () => wordText(shape.turnInputLen, words, next)));
  return { systemPrompt, userTurns };
}

/**
 * The messages of a conversation's turn `answers.length` (0-based): the system prompt, the
 * user message and the server's answer of every turn before, then this turn's user message.
 */
export function turnMessages(systemPrompt: string, userTurns: readonly string[], answers: readonly string[]): ChatMessage[] {
  const turn = answers.length;
  if (turn >= userTurns.length) throw new Error(`turn ${turn + 1} of a conversation of ${userTurns.length} turns`);
  const messages: ChatMessage[] = [{ role: 'system', content: systemPrompt }];
  for (let t = 0; t < turn; t++) messages.push({ role: 'user', content: userTurns[t]! }, { role: 'assistant', content: answers[t]! });
  messages.push({ role: 'user', content: userTurns[turn]! });
  return messages;
}

/** Tokens of a text in the served tokenizer, without special tokens. */
export type TokenCounter = (text: string) => Promise<number>;

/**
 * A counter over the server's POST /tokenize; null when the server has no such route (HTTP
 * 404 / 405). The body names no model (the field is optional in vLLM's route and afd's), so a
 * 404 means the route.
 */
export async function tokenizeCounter(baseUrl: string, apiKey: string | undefined): Promise<TokenCounter | null> {
  const count: TokenCounter = async (text) => {
    const res = await fetch(`${baseUrl}/tokenize`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}) },
      body: JSON.stringify({ prompt: text, add_special_tokens: false }),
    });
    if (!res.ok) throw Object.assign(new Error(`POST ${baseUrl}/tokenize failed with HTTP ${res.status}: ${(await res.text()).slice(0, 300)}`), { status: res.status });
    const body = (await res.json()) as { count?: number; tokens?: number[] };
    const n = body.count ?? body.tokens?.length;
    if (typeof n !== 'number') throw new Error(`POST ${baseUrl}/tokenize answered without count or tokens`);
    return n;
  };
  try {
    await count(' time');
  } catch (err) {
    const status = (err as { status?: number }).status;
    if (status === 404 || status === 405) return null;
    throw err;
  }
  return count;
}

/** Counts every text, at most 16 requests at a time. */
async function countAll(texts: readonly string[], count: TokenCounter): Promise<number[]> {
  const acquire = limiter(16);
  return Promise.all(
    texts.map(async (text) => {
      const release = await acquire();
      try {
        return await count(text);
      } finally {
        release();
      }
    }),
  );
}

/**
 * The words of the random-prompt list that are one token with their leading space: all of
 * them when the whole list is as many tokens as words (one request), else word by word.
 */
export async function oneTokenWords(count: TokenCounter): Promise<string[]> {
  if ((await count(WORDS.map((w) => ` ${w}`).join(''))) === WORDS.length) return [...WORDS];
  const counts = await countAll(WORDS.map((w) => ` ${w}`), count);
  const words = WORDS.filter((_, i) => counts[i] === 1);
  if (words.length < 16) throw new Error(`only ${words.length} of ${WORDS.length} words are one token in the served tokenizer: too few for random prompts`);
  return words;
}

/** Checks every text's token count against the shape; throws naming the first that differs. */
export async function checkLengths(d: MultiTurnDataset, shape: MultiTurnShape, count: TokenCounter): Promise<void> {
  const texts = [d.systemPrompt, ...d.userTurns.flat()];
  const counts = await countAll(texts, count);
  counts.forEach((n, i) => {
    const want = i === 0 ? shape.sharedPrefixLen : shape.turnInputLen;
    if (n !== want) throw new Error(`${i === 0 ? 'the system prompt' : `user message ${i}`} is ${n} tokens in the served tokenizer, not ${want}: its pre-tokenizer does not split words at spaces`);
  });
}
