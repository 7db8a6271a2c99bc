/** The Server screen's snippets, read back by bash, Python's parser and TypeScript's. */
import { execFileSync } from 'node:child_process';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { curlSnippet, pythonSnippet, SNIPPET_PROMPT, typescriptSnippet, type SnippetTarget } from './serverSnippets.js';

const keyed: SnippetTarget = { baseUrl: 'http://127.0.0.1:8000/', modelId: "it's-tiny", keyRequired: true, topology: '2A2F' };
const open: SnippetTarget = { ...keyed, keyRequired: false };

/** The arguments curl would get, as the shell passes them. */
function curlArgs(code: string, env: Record<string, string> = {}): string[] {
  const script = `curl() { printf '%s\\0' "$@"; }\n${code}`;
  return execFileSync('bash', ['-c', script], { encoding: 'utf8', env: { PATH: process.env['PATH'] ?? '', ...env } }).split('\0').slice(0, -1);
}

describe('server snippets', () => {
  it('curl: the chat completion of the served model, the key from $AFD_API_KEY only when required', () => {
    const args = curlArgs(curlSnippet(keyed), { AFD_API_KEY: 'k-1' });
    expect(args[0]).toBe('http://127.0.0.1:8000/v1/chat/completions');
    expect(args).toContain('Authorization: Bearer k-1');
    expect(JSON.parse(args.at(-1)!)).toEqual({ model: "it's-tiny", messages: [{ role: 'user', content: SNIPPET_PROMPT }], max_tokens: 32 });
    expect(curlSnippet(keyed)).toContain('$AFD_API_KEY');
    expect(curlArgs(curlSnippet(open)).some((a) => a.startsWith('Authorization'))).toBe(false);
    expect(curlSnippet(open).split('\n')[0]).toBe("# 2A2F serving it's-tiny");
  });

  it('Python parses, and reads the key from the environment when required', () => {
    for (const t of [keyed, open]) {
      const code = pythonSnippet(t);
      const call = execFileSync('python3', ['-c', 'import ast,sys; t=ast.parse(sys.stdin.read()); print(",".join(sorted(k.arg for n in ast.walk(t) if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "create" for k in n.keywords)))'], { input: code, encoding: 'utf8' }).trim();
      expect(call).toBe('max_tokens,messages,model');
      expect(code).toContain('base_url="http://127.0.0.1:8000/v1"');
    }
    expect(pythonSnippet(keyed)).toContain('api_key=os.environ["AFD_API_KEY"]');
    expect(pythonSnippet(open)).toContain('api_key="none"');
  });

  it('TypeScript parses as a module', () => {
    for (const t of [keyed, open]) {
      const code = typescriptSnippet(t);
      const out = ts.transpileModule(code, { reportDiagnostics: true, compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } });
      expect(out.diagnostics ?? []).toEqual([]);
      expect(code).toContain('baseURL: "http://127.0.0.1:8000/v1"');
      expect(code).toContain(`model: "it's-tiny"`);
    }
    expect(typescriptSnippet(keyed)).toContain('apiKey: process.env.AFD_API_KEY');
  });
});
