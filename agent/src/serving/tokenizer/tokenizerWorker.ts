/**
 * The body of a tokenizer worker thread (see TokenizerPool). It runs from the agent's own
 * bundle: cli/main.ts starts here instead of the command line when `workerData` says so.
 * It loads the model's tokenizer once, then answers one task at a time: token ids come
 * back in a transferred Int32Array, decoded text as a string, failures as their message.
 *
 * The thread lowers its own CPU priority (nice 10; on Linux the nice value is per thread):
 * a second of tokenising must not take CPU from the event loop and the engine threads
 * that stream other requests' tokens when cores are scarce.
 */
import { constants, setPriority } from 'node:os';
import type { MessagePort } from 'node:worker_threads';
import type { ChatMessage } from './ChatTemplate.js';
import type { ChatEncodeOptions } from './PromptEncoder.js';
import { TextTokenizer } from './TextTokenizer.js';

/** What a tokenizer worker is started with. */
export interface TokenizerWorkerData {
  afdWorker: 'tokenizer';
  /** Model directory holding tokenizer.json and tokenizer_config.json. */
  modelDir: string;
}

export type TokenizerTask =
  | { id: number; op: 'encode'; text: string; addSpecialTokens: boolean }
  | { id: number; op: 'chat'; messages: ChatMessage[]; options: ChatEncodeOptions }
  | { id: number; op: 'decode'; ids: number[] };

export type TokenizerReply =
  | { type: 'ready' }
  | { type: 'failed'; message: string }
  | { type: 'done'; id: number; ids: Int32Array }
  | { type: 'text'; id: number; text: string }
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
  port.on('message', (task: TokenizerTask) => {
    try {
      if (task.op === 'decode') return send({ type: 'text', id: task.id, text: tokenizer.decode(task.ids, false) });
      const ids = task.op === 'encode' ? tokenizer.encode(task.text, task.addSpecialTokens) : tokenizer.encodeChat(task.messages, task.options);
      const packed = Int32Array.from(ids);
      send({ type: 'done', id: task.id, ids: packed }, [packed.buffer]);
    } catch (err) {
      send({ type: 'error', id: task.id, message: messageOf(err) });
    }
  });
  send({ type: 'ready' });
}
