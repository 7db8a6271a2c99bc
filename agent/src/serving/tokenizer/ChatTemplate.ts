/** A tokenizer_config.json chat template, rendered with @huggingface/jinja. */
import { Template } from '@huggingface/jinja';

/** One chat message; content may be text or OpenAI text parts. */
export interface ChatMessage {
  role: string;
  content: string;
  name?: string;
}

export class ChatTemplate {
  private readonly template: Template;

  constructor(
    source: string,
    /** Values every render sees (bos_token, eos_token). */
    private readonly specialTokens: Record<string, string>,
  ) {
    try {
      this.template = new Template(source);
    } catch (err) {
      throw new Error(`the chat_template in tokenizer_config.json does not parse (${(err as Error).message})`);
    }
  }

  /** Renders messages; `extra` passes template variables such as enable_thinking. */
  render(messages: ChatMessage[], options: { addGenerationPrompt: boolean; extra?: Record<string, unknown> }): string {
    try {
      return this.template.render({
        ...this.specialTokens,
        ...options.extra,
        messages,
        add_generation_prompt: options.addGenerationPrompt,
      });
    } catch (err) {
      throw new Error(`chat template failed to render these messages: ${(err as Error).message}`);
    }
  }
}
