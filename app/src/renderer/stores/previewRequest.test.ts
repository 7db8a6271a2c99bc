/** The request the next send would make, for the request-as-code panel. */
import { describe, expect, it } from 'vitest';
import { defaultSampling } from './chatPersistence.js';
import { userMessage, type ChatMessage } from './conversations.js';
import { previewRequest, type PreviewSettings } from './previewRequest.js';
import { SAMPLE_TOOLS } from './toolSettings.js';

const settings: PreviewSettings = {
  mode: 'chat',
  systemPrompt: "Don't guess.",
  sampling: { ...defaultSampling, topK: 40 },
  responseFormat: { kind: 'json_object', schemaName: 'answer', schemaText: '' },
  tools: { toolsText: SAMPLE_TOOLS, toolChoice: 'get_weather', parallelToolCalls: false },
};

/** A conversation after a tool call and its result. */
function toolTurn(): ChatMessage[] {
  const user = userMessage('Weather in Paris?', 'chat', 0);
  const reply: ChatMessage = { ...user, id: 'r', role: 'assistant', content: '', finishReason: 'tool_calls', toolCalls: [{ index: 0, id: 'call_1', name: 'get_weather', arguments: '{"city": "Paris"}' }] };
  const result: ChatMessage = { ...user, id: 't', role: 'tool', content: "it's 18 C", toolCall: { id: 'call_1', name: 'get_weather' } };
  return [user, reply, result];
}

describe('previewRequest', () => {
  it('is the next send: the history with the tool turn, the typed text, and the fields', () => {
    const p = previewRequest(settings, toolTurn(), '');
    expect(p.problem).toBeNull();
    expect(p.request).toMatchObject({ mode: 'chat', response_format: { type: 'json_object' }, tool_choice: { type: 'function', function: { name: 'get_weather' } }, parallel_tool_calls: false });
    const msgs = (p.request as { messages: { role: string }[] }).messages;
    expect(msgs.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool']);
    const typed = previewRequest(settings, toolTurn(), 'And tomorrow?');
    expect((typed.request as { messages: { role: string; content: string }[] }).messages.at(-1)).toEqual({ role: 'user', content: 'And tomorrow?' });
  });

  it('says why a send would be refused, leaving broken fields out', () => {
    const bad = previewRequest({ ...settings, tools: { ...settings.tools, toolsText: '[' } }, [], 'hi');
    expect(bad.problem).toMatch(/^invalid tools: not valid JSON.*\(left out here\)$/);
    expect('tools' in bad.request).toBe(false);
    expect(previewRequest(settings, [], '').problem).toBe('type a message: the request shows it once typed');
    expect(previewRequest({ ...settings, mode: 'completion' }, [], '').problem).toBe('type a prompt first');
  });
});
