/**
 * The body of a tokenizer worker thread (see TokenizerPool). It runs from the agent's own
 * bundle: cli/main.ts starts here instead of the command line when `workerData` says so.
 * It loads the model's tokenizer once, then answers one task at a time: token ids come
 * back in a transferred Int32Array, decoded text as a string, failures as their message.
 * A prompt far longer than its task's `atMost` tokens is counted chunk by chunk and
 * answered `tooLong` once it passes (boundedEncode.ts); between chunks the thread hears
 * of a cancellation (the client left) and stops.
 *
 * The thread lowers its own CPU priority (nice 10; on Linux the nice value is per thread):
 * a second of tokenising must not take CPU from the event loop and the engine threads
 * that stream other requests' tokens when cores are scarce.
 */
import { constants, setPriority } from 'node:os';
import type { MessagePort } from 'node:worker_threads';
import type { ChatMessage } from './ChatTemplate.js';
import type { ChatEncodeOptions } from './PromptEncoder.js';
import { encodeBounded } from './boundedEncode.js';
import { TextTokenizer } from './TextTokenizer.js';

/** What a tokenizer worker is started with. */
export interface TokenizerWorkerData {
  afdWorker: 'tokenizer';
  /** Model directory holding tokenizer.json and tokenizer_config.json. */
  modelDir: string;
}

/** A task; `atMost` (encode, chat): tokenising may stop once the prompt is known to hold that many tokens. */
export type TokenizerTask =
  | { id: number; op: 'encode'; text: string; addSpecialTokens: boolean; atMost?: number }
  | { id: number; op: 'chat'; messages: ChatMessage[]; options: ChatEncodeOptions; atMost?: number }
  | { id: number; op: 'decode'; ids: number[] }
  /** Nobody wants task `id` any more: stop it at its next chunk. */
  | { id: number; op: 'cancel' };

export type TokenizerReply =
  | { type: 'ready' }
  | { type: 'failed'; message: string }
  /** `pieces`: the worker's piece-cache counters so far (SegmentedEncoder; absent when it has none). */
  | { type: 'done'; id: number; ids: Int32Array; pieces?: { hits: number; misses: number } }
  | { type: 'text'; id: number; text: string }
  /** The prompt holds at least `atLeast` (>= atMost) tokens; counting stopped there. */
  | { type: 'tooLong'; id: number; atLeast: number }
  | { type: 'cancelled'; id: number }
  | { type: 'error'; id: number; message: string };

export function isTokenizerWorkerData(data: unknown): data is TokenizerWorkerData {
  return typeof data === 'object' && data !== null && (data as { afdWorker?: unknown }).afdWorker === 'tokenizer' && typeof (data as { modelDir?: unknown }).modelDir === 'string';
}

const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));

export async function runTokenizerWorker(data: TokenizerWorkerData, port: MessagePort): Promise<void> {
  const send = (reply: TokenizerReply, transfer: ArrayBuffer[] = []): void => port.postMessage(reply, transfer);
  try {
    setPriority(constants.priority.PRIORITY_BELOW_NORMAL); // pid 0: this thread
  } catch {
    // not permitted or not supported: run at normal priority
  }
  let tokenizer: TextTokenizer;
  try {
    tokenizer = await TextTokenizer.fromDir(data.modelDir);
  } catch (err) {
    send({ type: 'failed', message: messageOf(err) });
    return;
  }
  const cancelled = new Set<number>();
  const pause = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
  const run = async (task: Exclude<TokenizerTask, { op: 'cancel' }>): Promise<TokenizerReply> => {
    if (task.op === 'decode') return { type: 'text', id: task.id, text: tokenizer.decode(task.ids, false) };
    const [text, special] = task.op === 'encode' ? [task.text, task.addSpecialTokens] : [tokenizer.renderChat(task.messages, task.options), task.options.addSpecialTokens ?? false];
    const out = await encodeBounded(tokenizer, text, special, task.atMost ?? Infinity, { pause, cancelled: () => cancelled.has(task.id) });
    if (out === null) return { type: 'cancelled', id: task.id };
    if ('atLeast' in out) return { type: 'tooLong', id: task.id, atLeast: out.atLeast };
    const pieces = tokenizer.pieceCacheStats();
    return { type: 'done', id: task.id, ids: Int32Array.from(out.ids), ...(pieces ? { pieces } : {}) };
  };
  port.on('message', (task: TokenizerTask) => {
    if (task.op === 'cancel') {
      cancelled.add(task.id);
      return;
    }
    run(task)
      .catch((err: unknown): TokenizerReply => ({ type: 'error', id: task.id, message: messageOf(err) }))
      .then((reply) => {
        cancelled.delete(task.id);
        send(reply, reply.type === 'done' ? [reply.ids.buffer as ArrayBuffer] : []);
      });
  });
  send({ type: 'ready' });
}
