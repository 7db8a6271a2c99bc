/**
 * A Playground request as code to run elsewhere: a curl command and a Python script with
 * the openai package, both with the body the console sends (openaiRequestBody) minus the
 * streaming fields. The API key comes from $AFD_API_KEY (an API without a key ignores it).
 */
import type { OpenAiRequest } from './openaiRequestBody.js';

export type CodeLanguage = 'curl' | 'python';

export interface CodeTarget {
  /** The topology API, e.g. http://127.0.0.1:8000 (no /v1). */
  baseUrl: string;
  /** Whether the body's model is the served id (else a placeholder: the code looks it up or says so). */
  modelKnown: boolean;
}

/** Said in the model field when the console has not yet learned the served id. */
export const MODEL_PLACEHOLDER = 'MODEL_ID';

const trimSlash = (u: string): string => u.replace(/\/+$/, '');

/** `s` inside single quotes for a POSIX shell. */
export function shellQuote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

export function curlCode(req: OpenAiRequest, target: CodeTarget): string {
  const lines = [
    ...(target.modelKnown ? [] : [`# ${MODEL_PLACEHOLDER}: the "id" that GET ${trimSlash(target.baseUrl)}/v1/models lists`]),
    `curl ${trimSlash(target.baseUrl)}${req.path} \\`,
    `  -H "Content-Type: application/json" \\`,
    `  -H "Authorization: Bearer $AFD_API_KEY" \\`,
    `  -d ${shellQuote(JSON.stringify(req.body, null, 2))}`,
  ];
  return lines.join('\n');
}

/**
 * A JSON value as a Python literal, `indent` spaces deep after the first line: JSON's
 * strings are Python strings; true, false and null become True, False and None.
 */
export function pythonLiteral(value: unknown, indent = 0): string {
  const json = JSON.stringify(value, null, 4) ?? 'None';
  const py = json.replace(/"(?:[^"\\]|\\.)*"|\btrue\b|\bfalse\b|\bnull\b/g, (t) => (t === 'true' ? 'True' : t === 'false' ? 'False' : t === 'null' ? 'None' : t));
  return py.split('\n').join(`\n${' '.repeat(indent)}`);
}

/** Fields the openai package has no parameter for go in extra_body. */
const EXTRA_BODY = new Set(['top_k', 'min_p', 'repetition_penalty', 'continue_final_message', 'add_generation_prompt']);

export function pythonCode(req: OpenAiRequest, target: CodeTarget): string {
  const chat = req.path === '/v1/chat/completions';
  const args: string[] = [];
  const extra: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(req.body)) {
    if (k === 'model' && !target.modelKnown) args.push('    model=model,');
    else if (EXTRA_BODY.has(k)) extra[k] = v;
    else args.push(`    ${k}=${pythonLiteral(v, 4)},`);
  }
  if (Object.keys(extra).length > 0) args.push(`    extra_body=${pythonLiteral(extra, 4)},`);
  return [
    'import os',
    '',
    'from openai import OpenAI',
    '',
    `client = OpenAI(base_url=${pythonLiteral(`${trimSlash(target.baseUrl)}/v1`)}, api_key=os.environ.get("AFD_API_KEY", "none"))`,
    ...(target.modelKnown ? [] : ['model = client.models.list().data[0].id']),
    `completion = client.${chat ? 'chat.completions' : 'completions'}.create(`,
    ...args,
    ')',
    chat ? 'print(completion.choices[0].message)' : 'print(completion.choices[0].text)',
  ].join('\n');
}

export function requestCode(language: CodeLanguage, req: OpenAiRequest, target: CodeTarget): string {
  return language === 'curl' ? curlCode(req, target) : pythonCode(req, target);
}
