import { describe, expect, it } from 'vitest';
import { createFakeBridge } from '../testing/fakeBridge.js';
import { createChatStore } from './chatStore.js';
import { EXPORTED_LIVE, exportChats, exportFileName, importChats } from './chatTransfer.js';
import { newConversation, replyTo, userMessage, type Conversation } from './conversations.js';

function chat(title: string, text: string, reply: string): Conversation {
  const ask = userMessage(text, 'chat', 1);
  const answer = { ...replyTo(ask, 2), content: reply, stage: 'done' as const, finishReason: 'length' as const, chunkTimesMs: [3, 4] };
  return { ...newConversation(1), title, messages: [ask, answer] };
}

const roundTrip = (list: Conversation[], existing: Conversation[] = []) => importChats(JSON.stringify(exportChats(list, 5)), existing);

describe('chat export and import', () => {
  it('an export imports back as the same chats (without chunk times)', () => {
    const list = [chat('Castles', 'What is a castle?', 'A fort.'), chat('Rivers', 'What is a river?', 'Water that flows.')];
    const r = roundTrip(list);
    expect(r).toEqual({ ok: true, conversations: list.map((c) => ({ ...c, messages: c.messages.map((m) => ({ ...m, chunkTimesMs: [] })) })) });
  });

  it('chats and messages whose ids are taken here get new ones; the rest keep theirs', () => {
    const a = chat('Castles', 'q', 'a');
    const b = chat('Rivers', 'q', 'a');
    const r = roundTrip([a, b], [a]);
    if (!r.ok) throw new Error(r.error);
    const [a2, b2] = r.conversations;
    expect(a2!.id).not.toBe(a.id);
    expect(a2!.messages.map((m) => m.id)).not.toContain(a.messages[0]!.id);
    expect(a2!.messages.map((m) => m.content)).toEqual(['q', 'a']);
    expect(b2!.id).toBe(b.id);
    // Importing the same file twice: both copies stay apart.
    const again = roundTrip([a, b], [a, ...r.conversations]);
    if (!again.ok) throw new Error(again.error);
    expect(new Set([a.id, ...r.conversations.map((c) => c.id), ...again.conversations.map((c) => c.id)]).size).toBe(5);
  });

  it('a reply still streaming when exported comes in stopped', () => {
    const c = chat('Live', 'q', 'partial');
    c.messages[1] = { ...c.messages[1]!, stage: 'decode', chatId: 'chat-9' };
    const r = roundTrip([c]);
    expect(r.ok && r.conversations[0]!.messages[1]).toMatchObject({ stage: 'stopped', chatId: null, error: EXPORTED_LIVE, content: 'partial' });
  });

  it('refuses what is not a chats file, saying what and where', () => {
    expect(importChats('{oops', [])).toMatchObject({ ok: false, error: expect.stringMatching(/^the file is not JSON/) });
    expect(importChats('{"format":"other"}', [])).toMatchObject({ ok: false, error: expect.stringMatching(/at format: not a chats file/) });
    expect(importChats('{"format":"afd-chats","version":2,"conversations":[]}', [])).toMatchObject({ ok: false, error: expect.stringMatching(/version 1/) });
    expect(importChats('{"format":"afd-chats","version":1,"conversations":[]}', [])).toMatchObject({ ok: false, error: expect.stringMatching(/holds no chats/) });
    const bad = exportChats([chat('x', 'q', 'a')], 0) as unknown as { conversations: { messages: { role: string }[] }[] };
    bad.conversations[0]!.messages[1]!.role = 'robot';
    expect(importChats(JSON.stringify(bad), [])).toMatchObject({ ok: false, error: expect.stringMatching(/at conversations\.0\.messages\.1\.role/) });
  });

  it('names the file after the chat, or "chats" for several', () => {
    const day = Date.UTC(2026, 11, 6);
    expect(exportFileName([{ title: 'What is a castle?' }], day)).toBe('afd-What-is-a-castle-2026-12-06.json');
    expect(exportFileName([{ title: '???' }], day)).toBe('afd-chat-2026-12-06.json');
    expect(exportFileName([{ title: 'a' }, { title: 'b' }], day)).toBe('afd-chats-2026-12-06.json');
  });
});

describe('chatStore.importConversations', () => {
  it('adds the chats of a file before the others and opens the first; a bad file adds nothing and says why', () => {
    const store = createChatStore(createFakeBridge(), { now: () => 10 });
    const emptyId = store.getState().activeId;
    const file = JSON.stringify(exportChats([chat('Castles', 'q', 'a')], 5));
    expect(store.getState().importConversations(file)).toBe(true);
    const s = store.getState();
    expect(s.conversations.map((c) => c.title)).toEqual(['Castles']); // the empty chat made way
    expect(s.activeId).toBe(s.conversations[0]!.id);
    expect(s.activeId).not.toBe(emptyId);
    expect(store.getState().importConversations(file)).toBe(true);
    expect(store.getState().conversations.map((c) => c.title)).toEqual(['Castles', 'Castles']);
    expect(store.getState().importConversations('[]')).toBe(false);
    expect(store.getState().error).toMatch(/^cannot import the file/);
    expect(store.getState().conversations).toHaveLength(2);
  });
});
