/**
 * How a chat request's rendering ends: with the assistant turn start (add_generation_prompt,
 * vLLM's default), at the end of the messages, or inside the final assistant message
 * (continue_final_message), so the model continues it and the reply holds only the new text.
 */
import { ApiError } from './ApiError.js';

export interface GenerationPrompt {
  addGenerationPrompt: boolean;
  continueFinalMessage: boolean;
}

/** The two fields as sent (absent or null: vLLM's defaults, true and false). */
export interface GenerationPromptFields {
  add_generation_prompt?: boolean | null;
  continue_final_message?: boolean | null;
}

/**
 * vLLM's defaults and its rule: both true is a 400 naming both (add_generation_prompt
 * defaults to true, so continuing needs `add_generation_prompt: false`, as transformers'
 * apply_chat_template asks under vLLM).
 */
export function generationPromptOf(r: GenerationPromptFields): GenerationPrompt {
  const addGenerationPrompt = r.add_generation_prompt ?? true;
  const continueFinalMessage = r.continue_final_message ?? false;
  if (addGenerationPrompt && continueFinalMessage) {
    const defaulted = r.add_generation_prompt == null ? ' (add_generation_prompt defaults to true)' : '';
    throw ApiError.badRequest(
      `Cannot set both \`continue_final_message\` and \`add_generation_prompt\` to True${defaulted}. Send add_generation_prompt: false to continue the last message`,
      'continue_final_message',
    );
  }
  return { addGenerationPrompt, continueFinalMessage };
}

/** /v1/chat/completions continues only an assistant reply: the new text is that reply's. */
export function chatGenerationPromptOf(r: GenerationPromptFields & { messages: readonly { role: string }[] }): GenerationPrompt {
  const g = generationPromptOf(r);
  const last = r.messages[r.messages.length - 1];
  if (g.continueFinalMessage && last?.role !== 'assistant') {
    throw ApiError.badRequest(
      `continue_final_message continues the final assistant message, but the last message is a ${last?.role ?? 'missing'} message: end messages with the assistant text to continue, or leave continue_final_message out`,
      'continue_final_message',
    );
  }
  return g;
}
