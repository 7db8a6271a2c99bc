/**
 * Which conversation a chat belongs to, as a number: a hash of its first two messages
 * (role and the first CONTENT_CHARS characters of each; typically the system prompt and the
 * first user message). Every turn of a conversation resends them unchanged, so its turns
 * get the same key, and the tokenizer pool sends them to the worker that has their
 * history's pieces cached. Chats that open alike share a key, and their pieces too.
 */
import type { ChatMessage } from './ChatTemplate.js';

const CONTENT_CHARS = 4096;

/** FNV-1a, 32 bits, over UTF-16 code units: fast, stable, not cryptographic (a hint, not a secret). */
function fnv1a(h: number, s: string): number {
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

export function conversationKey(messages: readonly ChatMessage[]): number {
  let h = 0x811c9dc5;
  for (const m of messages.slice(0, 2)) {
    h = fnv1a(h, m.role);
    h = fnv1a(h, '\u0000');
    h = fnv1a(h, (m.content ?? '').slice(0, CONTENT_CHARS));
    h = fnv1a(h, '\u0001');
  }
  return h;
}
