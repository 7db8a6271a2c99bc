/**
 * What the request log says about an exchange, read from the bodies the router kept
 * (BoundedCapture: a whole body, or its head and tail): the model, token usage, finish
 * reason and an error's message once the exchange ended, and a stream's generated text when
 * someone opens the record. OpenAI's three shapes are read: chat completions and
 * completions (JSON, or `data:` events ending with [DONE]) and the Responses API (a
 * response object, or named events ending with response.completed). A body cut in the
 * middle still yields what its head and tail hold; what cannot be read is null, never a guess.
 *
 * At the end of an exchange only a stream's last events are parsed (usage, finish reason
 * and errors come last; the model is the request's): the log's cost per request stays small
 * and flat however long the stream.
 */

export interface ResponseFacts {
  model: string | null;
  promptTokens: number | null;
  completionTokens: number | null;
  finishReason: string | null;
  /** An error body's message (or an error event's). */
  error: string | null;
}

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const count = (v: unknown): number | null => (typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : null);

/** Stream events parsed from the end, at most, looking for usage and a finish reason. */
const LAST_EVENTS = 16;

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

/** The JSON object of a stream's `data:` line; null for any other line ([DONE], `event:`, a cut one). */
function dataObject(line: string): Json | null {
  if (!line.startsWith('data: {')) return null;
  const o = parse(line.slice(6));
  return isObject(o) ? o : null;
}

/**
 * The `data:` objects of a stream, from its last line back (`backward`) or from its first
 * line on, found with indexOf: no split of the whole body (a rope of many small strings).
 */
function* streamObjects(body: string, backward: boolean): Generator<Json> {
  if (backward) {
    for (let end = body.length; end > 0; ) {
      const start = body.lastIndexOf('\n', end - 1);
      const o = dataObject(body.slice(start + 1, end));
      if (o) yield o;
      end = start;
    }
  } else {
    for (let start = 0; start < body.length; ) {
      const nl = body.indexOf('\n', start);
      const end = nl < 0 ? body.length : nl;
      const o = dataObject(body.slice(start, end));
      if (o) yield o;
      start = end + 1;
    }
  }
}

/**
 * Folds one response object, stream chunk or event into `facts`, newest first: a field
 * already set (by a later chunk) stays.
 */
function fold(facts: ResponseFacts, o: Json, reasons: string[]): void {
  if (typeof o['type'] === 'string') {
    // A Responses API event: the response object rides in the created / final ones.
    if (isObject(o['response'])) fold(facts, o['response'], reasons);
    if (o['type'] === 'error' && typeof o['message'] === 'string') facts.error ??= o['message'];
    return;
  }
  if (facts.model === null && typeof o['model'] === 'string') facts.model = o['model'];
  const usage = o['usage'];
  if (isObject(usage) && facts.completionTokens === null) {
    facts.promptTokens = count(usage['prompt_tokens'] ?? usage['input_tokens']);
    facts.completionTokens = count(usage['completion_tokens'] ?? usage['output_tokens']);
  }
  const err = o['error'];
  if (isObject(err) && typeof err['message'] === 'string') facts.error ??= err['message'];
  const choices = o['choices'];
  if (Array.isArray(choices)) {
    // Before those of later chunks (folded first), in the choices' order.
    const here: string[] = [];
    for (const c of choices) if (isObject(c) && typeof c['finish_reason'] === 'string' && !reasons.includes(c['finish_reason']) && !here.includes(c['finish_reason'])) here.push(c['finish_reason']);
    reasons.unshift(...here);
  }
  if (o['object'] === 'response' && typeof o['status'] === 'string' && reasons.length === 0) {
    const details = o['incomplete_details'];
    reasons.push(`${o['status']}${isObject(details) && typeof details['reason'] === 'string' ? `: ${details['reason']}` : ''}`);
  }
}

/** The model a stream chunk or a Responses event's response names. */
function modelOf(o: Json): string | null {
  const r = isObject(o['response']) ? o['response'] : o;
  return typeof r['model'] === 'string' ? r['model'] : null;
}

/** Reads a response body: JSON (`stream` false) or the events of a stream (its last LAST_EVENTS only). */
export function responseFacts(body: string, stream: boolean): ResponseFacts {
  const facts: ResponseFacts = { model: null, promptTokens: null, completionTokens: null, finishReason: null, error: null };
  const reasons: string[] = [];
  if (stream) {
    let parsed = 0;
    for (const o of streamObjects(body, true)) {
      fold(facts, o, reasons);
      if (++parsed >= LAST_EVENTS || (facts.completionTokens !== null && reasons.length > 0)) break;
    }
    // The model from the first event, when the last ones did not name it.
    if (facts.model === null) {
      for (const o of streamObjects(body, false)) {
        facts.model = modelOf(o);
        if (facts.model !== null) break;
      }
    }
  } else {
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
  }
  facts.finishReason = reasons.length > 0 ? reasons.join(',') : null;
  return facts;
}

/** A stream's generated text, in order, from the events kept (chat deltas, completion text, Responses text deltas). */
export function streamText(body: string): string {
  let text = '';
  for (const o of streamObjects(body, false)) {
    if (o['type'] === 'response.output_text.delta' && typeof o['delta'] === 'string') text += o['delta'];
    const choices = o['choices'];
    if (!Array.isArray(choices)) continue;
    for (const c of choices) {
      if (!isObject(c)) continue;
      const delta = c['delta'];
      if (isObject(delta) && typeof delta['content'] === 'string') text += delta['content'];
      else if (typeof c['text'] === 'string') text += c['text'];
    }
  }
  return text;
}
