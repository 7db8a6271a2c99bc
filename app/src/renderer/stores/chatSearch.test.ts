import { describe, expect, it } from 'vitest';
import { matchesSearch, searchWords } from './chatSearch.js';
import { newConversation, userMessage, type Conversation } from './conversations.js';

function chat(title: string, ...texts: string[]): Conversation {
  return { ...newConversation(0), title, messages: texts.map((t) => userMessage(t, 'chat', 0)) };
}

describe('chat search', () => {
  it('splits the query into folded words', () => {
    expect(searchWords('  Café   RIVER ')).toEqual(['cafe', 'river']);
    expect(searchWords('   ')).toEqual([]);
  });

  it('matches a word of the title or of any message, ignoring case and accents', () => {
    const c = chat('Castles', 'What is a moat?', 'A ditch of WATER around a café');
    expect(matchesSearch(c, searchWords('castles'))).toBe(true);
    expect(matchesSearch(c, searchWords('water'))).toBe(true);
    expect(matchesSearch(c, searchWords('cafe'))).toBe(true);
    expect(matchesSearch(c, searchWords('river'))).toBe(false);
  });

  it('needs every word, each anywhere in the chat', () => {
    const c = chat('Castles', 'moat', 'ditch');
    expect(matchesSearch(c, searchWords('moat castles'))).toBe(true);
    expect(matchesSearch(c, searchWords('moat river'))).toBe(false);
  });

  it('a blank query matches every chat', () => {
    expect(matchesSearch(chat('x'), [])).toBe(true);
  });
});
