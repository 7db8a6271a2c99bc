/**
 * What the request log says about an exchange, read once after it ended from the bodies the
 * router kept (BoundedCapture: a whole body, or its head and tail): the model, token usage,
 * finish reason, an error's message and a stream's generated text. OpenAI's three shapes
 * are read: chat completions and completions (JSON, or `data:` events ending with [DONE])
 * and the Responses API (a response object, or named events ending with response.completed).
 * A body cut in the middle still yields what its head and tail hold; what cannot be read is
 * null, never a guess.
 */

export interface ResponseFacts {
  model: string | null;
  promptTokens: number | null;
  completionTokens: number | null;
  finishReason: string | null;
  /** An error body's message (or an error event's). */
  error: string | null;
  /** A stream's generated text, in order (null when not a stream). */
  text: string | null;
}

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const count = (v: unknown): number | null => (typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : null);

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The "model" a request body names: from the parsed body, else from its head (a body cut in the middle). */
export function requestModel(body: string): string | null {
  const parsed = parse(body);
  if (isObject(parsed)) return typeof parsed['model'] === 'string' ? parsed['model'] : null;
  const m = /"model"\s*:\s*("(?:[^"\\]|\\.){0,512}")/.exec(body);
  const name = m ? parse(m[1]!) : undefined;
  return typeof name === 'string' ? name : null;
}

/** Folds one response object or stream chunk into `facts`. */
function fold(facts: ResponseFacts, o: Json, reasons: string[]): void {
  if (facts.model === null && typeof o['model'] === 'string') facts.model = o['model'];
  const usage = o['usage'];
  if (isObject(usage)) {
    facts.promptTokens = count(usage['prompt_tokens'] ?? usage['input_tokens']) ?? facts.promptTokens;
    facts.completionTokens = count(usage['completion_tokens'] ?? usage['output_tokens']) ?? facts.completionTokens;
  }
  const err = o['error'];
  if (isObject(err) && typeof err['message'] === 'string') facts.error = err['message'];
  const choices = o['choices'];
  if (Array.isArray(choices)) {
    for (const c of choices) {
      if (!isObject(c)) continue;
      if (typeof c['finish_reason'] === 'string' && !reasons.includes(c['finish_reason'])) reasons.push(c['finish_reason']);
      if (facts.text === null) continue;
      const delta = c['delta'];
      if (isObject(delta) && typeof delta['content'] === 'string') facts.text += delta['content'];
      else if (typeof c['text'] === 'string') facts.text += c['text'];
    }
  }
  // The Responses API: a response object (whole, or in response.completed / .incomplete / .failed events).
  if (o['object'] === 'response') {
    const details = o['incomplete_details'];
    const why = isObject(details) && typeof details['reason'] === 'string' ? `: ${details['reason']}` : '';
    if (typeof o['status'] === 'string') reasons.splice(0, reasons.length, `${o['status']}${why}`);
  }
}

/** Reads a response body: JSON (`stream` false) or the events of a stream. */
export function responseFacts(body: string, stream: boolean): ResponseFacts {
  const facts: ResponseFacts = { model: null, promptTokens: null, completionTokens: null, finishReason: null, error: null, text: stream ? '' : null };
  const reasons: string[] = [];
  if (!stream) {
    const parsed = parse(body);
    if (isObject(parsed)) fold(facts, parsed, reasons);
    else {
      // Cut in the middle: the usage and finish reasons sit near the end, the model near the start.
      facts.model = requestModel(body);
      const last = (re: RegExp): string | undefined => [...body.matchAll(re)].pop()?.[1];
      const prompt = last(/"(?:prompt|input)_tokens"\s*:\s*(\d+)/g);
      const completion = last(/"(?:completion|output)_tokens"\s*:\s*(\d+)/g);
      facts.promptTokens = prompt === undefined ? null : Number(prompt);
      facts.completionTokens = completion === undefined ? null : Number(completion);
      for (const m of body.matchAll(/"finish_reason"\s*:\s*"([a-z_]{1,64})"/g)) if (!reasons.includes(m[1]!)) reasons.push(m[1]!);
    }
  } else {
    for (const line of body.split('\n')) {
      if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
      const o = parse(line.slice(6));
      if (!isObject(o)) continue;
      if (typeof o['type'] === 'string' && o['type'].startsWith('response.')) {
        // Named events: text deltas, and the response object in the final one.
        if (o['type'] === 'response.output_text.delta' && typeof o['delta'] === 'string') facts.text += o['delta'];
        if (isObject(o['response'])) fold(facts, o['response'], reasons);
      } else if (o['type'] === 'error' && typeof o['message'] === 'string') facts.error = o['message'];
      else fold(facts, o, reasons);
    }
  }
  facts.finishReason = reasons.length > 0 ? reasons.join(',') : null;
  return facts;
}
