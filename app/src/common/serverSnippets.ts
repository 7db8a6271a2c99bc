/**
 * The Server screen's copy-paste code: one chat completion against the running topology
 * as curl, Python (openai package) and TypeScript (openai package). The key is never in
 * the code: it comes from $AFD_API_KEY when the API requires one, and an open API gets
 * no Authorization header (the SDKs get a placeholder they insist on).
 */
import { pythonLiteral, shellQuote } from './requestCode.js';

export type SnippetLanguage = 'curl' | 'python' | 'typescript';

export interface SnippetTarget {
  /** The topology API, e.g. http://127.0.0.1:8000 (no /v1). */
  baseUrl: string;
  /** The served model's id (what GET /v1/models lists). */
  modelId: string;
  /** Whether the API requires a bearer key (unknown counts as yes: the header does no harm). */
  keyRequired: boolean;
  /** What runs, for the first comment line, e.g. "2A2F". */
  topology: string;
}

/** The question every snippet asks. */
export const SNIPPET_PROMPT = 'Say hello in one short sentence.';
const MAX_TOKENS = 32;

const trimSlash = (u: string): string => u.replace(/\/+$/, '');

export function curlSnippet(t: SnippetTarget): string {
  const body = { model: t.modelId, messages: [{ role: 'user', content: SNIPPET_PROMPT }], max_tokens: MAX_TOKENS };
  return [
    `# ${t.topology} serving ${t.modelId}`,
    `curl ${trimSlash(t.baseUrl)}/v1/chat/completions \\`,
    `  -H "Content-Type: application/json" \\`,
    ...(t.keyRequired ? [`  -H "Authorization: Bearer $AFD_API_KEY" \\`] : []),
    `  -d ${shellQuote(JSON.stringify(body))}`,
  ].join('\n');
}

export function pythonSnippet(t: SnippetTarget): string {
  return [
    `# ${t.topology} serving ${t.modelId}`,
    ...(t.keyRequired ? ['import os', ''] : []),
    'from openai import OpenAI',
    '',
    `client = OpenAI(base_url=${pythonLiteral(`${trimSlash(t.baseUrl)}/v1`)}, api_key=${t.keyRequired ? 'os.environ["AFD_API_KEY"]' : '"none"'})`,
    'completion = client.chat.completions.create(',
    `    model=${pythonLiteral(t.modelId)},`,
    `    messages=[{"role": "user", "content": ${pythonLiteral(SNIPPET_PROMPT)}}],`,
    `    max_tokens=${MAX_TOKENS},`,
    ')',
    'print(completion.choices[0].message.content)',
  ].join('\n');
}

export function typescriptSnippet(t: SnippetTarget): string {
  const str = (s: string): string => JSON.stringify(s);
  return [
    `// ${t.topology} serving ${t.modelId}`,
    "import OpenAI from 'openai';",
    '',
    `const client = new OpenAI({ baseURL: ${str(`${trimSlash(t.baseUrl)}/v1`)}, apiKey: ${t.keyRequired ? 'process.env.AFD_API_KEY' : "'none'"} });`,
    'const completion = await client.chat.completions.create({',
    `  model: ${str(t.modelId)},`,
    `  messages: [{ role: 'user', content: ${str(SNIPPET_PROMPT)} }],`,
    `  max_tokens: ${MAX_TOKENS},`,
    '});',
    'console.log(completion.choices[0]?.message.content);',
  ].join('\n');
}

export function serverSnippet(language: SnippetLanguage, t: SnippetTarget): string {
  return language === 'curl' ? curlSnippet(t) : language === 'python' ? pythonSnippet(t) : typescriptSnippet(t);
}
