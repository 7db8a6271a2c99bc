/**
 * What /v1/responses translates but cannot serve yet, refused with a 400 naming the field:
 * a text.format that constrains the output (json_object, json_schema) and a tool_choice
 * that forces calls. Both need the grammar engine (GenerateParams.grammar, the grammar
 * service); once it is connected, the route sets params.grammar from plan.grammar (and from
 * the forced tool_choice, through the tools' grammar) instead of calling this.
 */
import { ApiError } from '../ApiError.js';
import type { ResponsePlan } from './requestPlan.js';

const NOT_YET = 'needs the grammar engine, which this build does not connect yet';

export function refusedForNow(plan: Pick<ResponsePlan, 'grammar' | 'tools'>): void {
  if (plan.grammar) {
    const param = plan.grammar.param;
    throw ApiError.badRequest(`${param}: constraining the output to ${plan.grammar.type === 'json_object' ? 'a JSON object' : 'a JSON schema'} ${NOT_YET}; send {"type": "text"} and ask for the format in the prompt`, param, 'unsupported_parameter');
  }
  if (plan.tools.forced) {
    throw ApiError.badRequest(`tool_choice: forcing a function call ${NOT_YET}; send "auto" (the model may call the tools) or "none"`, 'tool_choice', 'unsupported_parameter');
  }
}
