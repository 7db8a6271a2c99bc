/** A tokenizer_config.json chat template, rendered with @huggingface/jinja. */
import { Template } from '@huggingface/jinja';

/** One chat message as templates take it (HF transformers' conversation format). */
export interface ChatMessage {
  role: string;
  /** Text; null only for an assistant message of tool calls, with a template that tests for it. */
  content: string | null;
  name?: string;
  /** Assistant: the calls it made; arguments parsed to an object, or the JSON text for templates that concatenate it. */
  tool_calls?: TemplateToolCall[];
  /** Tool: the call this result answers. */
  tool_call_id?: string;
}

export interface TemplateToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: Record<string, unknown> | string };
}

export class ChatTemplate {
  private readonly template: Template;

  constructor(
    /** The template's text (what tool-call markup it writes, how it reads messages). */
    readonly source: string,
    /** Values every render sees (bos_token, eos_token). */
    private readonly specialTokens: Record<string, string>,
  ) {
    try {
      this.template = new Template(source);
    } catch (err) {
      throw new Error(`the chat_template in tokenizer_config.json does not parse (${(err as Error).message})`);
    }
  }

  /**
   * Renders messages; `extra` passes template variables such as enable_thinking. With
   * `continueFinalMessage` the text ends where the last message's content ends (what follows
   * it, such as an end-of-turn token, is cut), so a model continues that message.
   */
  render(messages: ChatMessage[], options: { addGenerationPrompt: boolean; continueFinalMessage?: boolean; extra?: Record<string, unknown> }): string {
    if (options.continueFinalMessage && options.addGenerationPrompt) {
      throw new Error('continue_final_message and add_generation_prompt cannot both be true: the one continues the last message, the other starts a new one');
    }
    let text: string;
    try {
      text = this.template.render({
        ...this.specialTokens,
        ...options.extra,
        messages,
        add_generation_prompt: options.addGenerationPrompt,
      });
    } catch (err) {
      throw new Error(`chat template failed to render these messages: ${(err as Error).message}`);
    }
    return options.continueFinalMessage ? cutAfterFinalMessage(text, messages.at(-1)?.content ?? '') : text;
  }
}

/** The rendered chat up to the end of the last message's content (its last occurrence, else that of its trimmed form). */
function cutAfterFinalMessage(text: string, content: string): string {
  for (const c of [content, content.trim()]) {
    const at = text.lastIndexOf(c);
    if (at >= 0) return text.slice(0, at + c.length);
  }
  throw new Error('continue_final_message: the last message does not appear in the rendered chat (the chat template changes it), so it cannot be continued');
}
