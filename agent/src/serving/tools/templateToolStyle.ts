/**
 * How a chat template reads the tool calls of assistant messages, from its text. HF and
 * vLLM hand templates the arguments parsed to an object (what Llama 3's `| tojson` and
 * Qwen3's `is string` test expect), and an empty string for a null content; two kinds of
 * templates need otherwise:
 *
 *   - DeepSeek-V3's concatenates the arguments as text (`... + tool['function']['arguments']
 *     + ...`): an object there renders wrong, so those templates get the JSON text;
 *   - DeepSeek's tests `message['content'] is none` to tell a tool-call turn from a text
 *     one: those templates get the null content (Qwen3's, which runs string tests on the
 *     content, gets "").
 */

export interface TemplateToolStyle {
  /** Give tool call arguments as the JSON text (else parsed to an object). */
  argumentsAsText: boolean;
  /** Give an assistant message's null content as null (else ""). */
  nullContent: boolean;
}

/** `arguments` followed by `+`: the template concatenates it as text. */
const CONCATENATED_ARGUMENTS = /arguments(?:'\]|"\])?\s*\+/;
/** A test of the message's content against none. */
const CONTENT_NONE_TEST = /message(?:\.content|\[['"]content['"]\])\s+is\s+(?:not\s+)?none/;

export function templateToolStyle(source: string): TemplateToolStyle {
  return { argumentsAsText: CONCATENATED_ARGUMENTS.test(source), nullContent: CONTENT_NONE_TEST.test(source) };
}
