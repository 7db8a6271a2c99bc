/**
 * Search over the Playground's chats: a chat matches when every word of the query occurs
 * (case- and accent-insensitive) in its title or in the text of any of its messages.
 */
import type { Conversation } from './conversations.js';

/** Lower case without accents, so "cafe" finds "Café". */
const fold = (text: string): string => text.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase();

/** The query's words (folded); empty when the query is blank. */
export function searchWords(query: string): string[] {
  return fold(query).split(/\s+/).filter((w) => w !== '');
}

/** Whether `c` holds every word of `words` (in its title or messages); any chat matches no words. */
export function matchesSearch(c: Pick<Conversation, 'title' | 'messages'>, words: readonly string[]): boolean {
  if (words.length === 0) return true;
  const text = fold([c.title, ...c.messages.map((m) => m.content)].join('\n'));
  return words.every((w) => text.includes(w));
}
