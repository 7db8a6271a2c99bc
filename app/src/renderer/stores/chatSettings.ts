/**
 * Per-chat settings: a chat may keep its own system prompt and sampling; one that does not
 * uses the Playground's (the defaults). The settings panel edits whichever the chat on
 * screen uses.
 */
import type { Conversation, Sampling } from './conversations.js';

/** A chat's own system prompt and sampling, in place of the defaults. */
export interface ChatSettings {
  systemPrompt: string;
  sampling: Sampling;
}

/** What chat `c` sends with: its own settings, else `defaults`. */
export function effectiveSettings(c: Pick<Conversation, 'own'>, defaults: ChatSettings): ChatSettings {
  return c.own ?? defaults;
}
