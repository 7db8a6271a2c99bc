/**
 * What constrains one request's output, once the API's fields are resolved (response_format,
 * vLLM's structured_outputs and guided_* names, a tool_choice of "required" or a named
 * function). The grammar service compiles it (xgrammar, cached by a hash of the spec) and
 * the serving loop masks every sampled token of the request with it.
 *
 * `param` names the request field the spec came from (e.g. "response_format.json_schema.schema",
 * "structured_outputs.regex", "tool_choice"), so a spec the engine cannot handle is a 400
 * that says which part.
 */
export type GrammarSpec =
  /**
   * A JSON Schema (draft 2020-12 subset that xgrammar supports); `true` = any JSON value.
   * `anyWhitespace` true lets the model put any whitespace between JSON tokens (vLLM's
   * default); false (the default here) fixes it to one line with ", " and ": ", as vLLM's
   * disable_any_whitespace does. Compact is the default because free whitespace lets a weak
   * or random-weight model pad an answer with newlines until max_tokens (its output is then
   * no JSON), and its grammars compile faster; structured_outputs.disable_any_whitespace:
   * false asks for vLLM's default.
   */
  | { type: 'json_schema'; schema: Record<string, unknown> | boolean; param: string; anyWhitespace?: boolean }
  /** Any JSON object (OpenAI's json_object mode); `anyWhitespace` as for json_schema. */
  | { type: 'json_object'; param: string; anyWhitespace?: boolean }
  /** A regular expression the whole output must match. */
  | { type: 'regex'; pattern: string; param: string }
  /** Exactly one of these strings. */
  | { type: 'choice'; choices: string[]; param: string }
  /** An EBNF / GBNF grammar (root rule `root`). */
  | { type: 'grammar'; grammar: string; param: string };
