/** OpenAI chat messages as the model's chat template takes them (chat completions and /tokenize). */
import type { z } from 'zod';
import type { ChatMessage } from '../tokenizer/ChatTemplate.js';
import type { chatMessageSchema } from './schemas.js';

/** `developer` becomes `system` (templates know no developer role); text parts are joined. */
export function toTemplateMessages(messages: readonly z.infer<typeof chatMessageSchema>[]): ChatMessage[] {
  return messages.map((m) => ({
    role: m.role === 'developer' ? 'system' : m.role,
    content: typeof m.content === 'string' ? m.content : (m.content ?? []).map((p) => p.text).join(''),
    ...(m.name ? { name: m.name } : {}),
  }));
}
