/**
 * The request the Playground's next send would make, for showing as code: the active
 * conversation's finished messages plus the text being typed (if any), with the current
 * settings. Unlike a send it does not refuse: what would be refused is said beside it.
 */
import type { ChatStart } from '@afd/shared';
import { chatApiMessages } from './apiMessages.js';
import { isLive, userMessage, validateSampling, type ChatMessage, type ChatMode, type Sampling } from './conversations.js';
import { chatRequestFields } from './requestFields.js';
import type { ResponseFormatSettings } from './responseFormat.js';
import type { ToolSettings } from './toolSettings.js';

export interface PreviewSettings {
  mode: ChatMode;
  systemPrompt: string;
  sampling: Sampling;
  responseFormat: ResponseFormatSettings;
  tools: ToolSettings;
}

export interface Preview {
  request: ChatStart;
  /** Why a send of it would be refused now; null when it would go. */
  problem: string | null;
}

export function previewRequest(s: PreviewSettings, messages: readonly ChatMessage[], draft: string): Preview {
  const typed = draft.trim() !== '';
  const samplingProblem = validateSampling(s.sampling);
  if (s.mode === 'completion') {
    const lastPrompt = [...messages].reverse().find((m) => m.role === 'user' && m.mode === 'completion')?.content ?? '';
    const prompt = typed ? draft : lastPrompt;
    const problem = samplingProblem ? `invalid sampling settings: ${samplingProblem}` : prompt === '' ? 'type a prompt first' : null;
    return { request: { mode: 'completion', prompt, sampling: s.sampling }, problem };
  }
  const history = [...messages.filter((m) => !isLive(m)), ...(typed ? [userMessage(draft, 'chat', 0)] : [])];
  const system = s.systemPrompt.trim() ? [{ role: 'system' as const, content: s.systemPrompt.trim() }] : [];
  const fields = chatRequestFields(s.responseFormat, s.tools);
  const apiMessages = [...system, ...chatApiMessages(history)];
  const last = history.at(-1)?.role;
  const problem = samplingProblem
    ? `invalid sampling settings: ${samplingProblem}`
    : !fields.ok
      ? `invalid ${fields.error} (left out here)`
      : last !== 'user' && last !== 'tool'
        ? 'type a message: the request shows it once typed'
        : null;
  return { request: { mode: 'chat', messages: apiMessages, sampling: s.sampling, ...(fields.ok ? fields.value : {}) }, problem };
}
