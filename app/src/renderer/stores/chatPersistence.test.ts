/** The sampling fields added after the first consoles (min-p, penalties, stop, token view) and reply tokens, through storage. */
import { describe, expect, it } from 'vitest';
import { defaultSampling, persistChats, restoreChats, type PersistedChats } from './chatPersistence.js';
import { newConversation, replyTo, userMessage } from './conversations.js';
import { defaultResponseFormat } from './responseFormat.js';
import { defaultToolSettings } from './toolSettings.js';

function state(): PersistedChats {
  const c = newConversation(1);
  return { mode: 'chat', systemPrompt: '', sampling: { ...defaultSampling }, responseFormat: defaultResponseFormat, tools: defaultToolSettings, conversations: [c], activeId: c.id, sidePanelOpen: null };
}

describe('sampling and reply tokens in storage', () => {
  it('keeps min-p, the penalties, stop strings, the token view and each reply token', () => {
    const s = state();
    const sampling = { ...defaultSampling, minP: 0.1, presencePenalty: 0.5, frequencyPenalty: -1, repetitionPenalty: 1.2, stop: ['END', '\n'], topLogprobs: 5 };
    const ask = userMessage('hi', 'chat', 1);
    const tokens = [{ token: 'Hello', logprob: -0.25, top: [{ token: 'Hello', logprob: -0.25 }, { token: 'Hi', logprob: -1.6 }] }];
    const reply = { ...replyTo(ask, 2), content: 'Hello', stage: 'done' as const, tokens };
    s.sampling = sampling;
    s.conversations[0] = { ...s.conversations[0]!, messages: [ask, reply], own: { systemPrompt: 'x', sampling } };
    const back = restoreChats(JSON.parse(JSON.stringify(persistChats(s))), state()).state;
    expect(back.sampling).toEqual(sampling);
    expect(back.conversations[0]!.own!.sampling).toEqual(sampling);
    expect(back.conversations[0]!.messages[1]!.tokens).toEqual(tokens);
  });

  it('sampling stored by an older console (no new fields) gets the defaults; bad values fall back one by one', () => {
    const old = { temperature: 0.2, topP: 1, topK: 0, maxTokens: 64, seed: null };
    const s = JSON.parse(JSON.stringify(persistChats(state()))) as Record<string, unknown> & { conversations: Record<string, unknown>[] };
    s['sampling'] = { ...old, minP: 3, stop: 'END' };
    s.conversations[0]!['own'] = { systemPrompt: '', sampling: old };
    const back = restoreChats(s, state()).state;
    expect(back.sampling).toEqual({ ...defaultSampling, ...old });
    expect(back.conversations[0]!.own!.sampling).toEqual({ ...defaultSampling, ...old });
  });

  it('a number being typed (NaN) is stored as the default', () => {
    const s = state();
    s.sampling = { ...defaultSampling, minP: Number.NaN, repetitionPenalty: Number.NaN, topLogprobs: 3 };
    expect(persistChats(s).sampling).toEqual({ ...defaultSampling, topLogprobs: 3 });
  });
});
