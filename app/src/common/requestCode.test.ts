/** The request as code: curl and Python with the body the console sends; both read back by the real shell and Python parsers. */
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { openaiRequestBody, type ChatBody } from './openaiRequestBody.js';
import { curlCode, MODEL_PLACEHOLDER, pythonCode, pythonLiteral } from './requestCode.js';

const sampling = { temperature: 0.7, topP: 1, topK: 40, maxTokens: 128, seed: null, minP: 0, presencePenalty: 0, frequencyPenalty: 0, repetitionPenalty: 1, stop: [], topLogprobs: null };

/** A chat after a tool call and its result, with structured output and tools. */
const req = openaiRequestBody(
  {
    mode: 'chat',
    messages: [
      { role: 'system', content: "Don't guess." },
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } }] },
      { role: 'tool', content: "it's 18 C", tool_call_id: 'call_1' },
    ],
    sampling,
    response_format: { type: 'json_object' },
    tools: [{ type: 'function', function: { name: 'get_weather', description: 'Current weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }],
    tool_choice: { type: 'function', function: { name: 'get_weather' } },
    parallel_tool_calls: false,
  },
  'tiny',
);

const target = { baseUrl: 'http://127.0.0.1:8000/', modelKnown: true };

describe('request code', () => {
  it('curl posts the body as JSON, quoted for the shell, with the tool fields and tool messages', () => {
    const code = curlCode(req, target);
    expect(code.split('\n')[0]).toBe('curl http://127.0.0.1:8000/v1/chat/completions \\');
    // The shell itself reads the command back: the -d argument is exactly the body.
    const script = `curl() { for a; do last="$a"; done; printf %s "$last"; }\n${code}`;
    const sent = JSON.parse(execFileSync('bash', ['-c', script], { encoding: 'utf8' })) as Record<string, unknown>;
    expect(sent).toEqual(JSON.parse(JSON.stringify(req.body)) as ChatBody);
    expect(sent).toMatchObject({ response_format: { type: 'json_object' }, parallel_tool_calls: false, tool_choice: { type: 'function', function: { name: 'get_weather' } } });
    expect(sent['messages']).toContainEqual({ role: 'tool', content: "it's 18 C", tool_call_id: 'call_1' });
    expect(sent['messages']).toContainEqual({ role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } }] });
  });

  it('Python passes every field as a keyword (top_k in extra_body), and parses as Python', () => {
    const code = pythonCode(req, target);
    expect(code).toContain('client = OpenAI(base_url="http://127.0.0.1:8000/v1"');
    expect(code).toContain('completion = client.chat.completions.create(');
    expect(code).toContain('    parallel_tool_calls=False,');
    expect(code).toContain('"content": None,');
    expect(code).toContain('    extra_body={\n        "top_k": 40\n    },');
    expect(code).toMatch(/ {4}tools=\[\n {8}\{\n {12}"type": "function"/);
    // The real Python parser reads it, and the call's keywords are the body's fields.
    const keywords = execFileSync('python3', ['-c', 'import ast,sys; t=ast.parse(sys.stdin.read()); print(",".join(sorted(k.arg for n in ast.walk(t) if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "create" for k in n.keywords)))'], { input: code, encoding: 'utf8' }).trim();
    expect(keywords.split(',')).toEqual(['extra_body', 'max_tokens', 'messages', 'model', 'parallel_tool_calls', 'response_format', 'temperature', 'tool_choice', 'tools', 'top_p']);
  });

  it("Python puts vLLM's fields (min_p, repetition_penalty, continue_final_message, add_generation_prompt) in extra_body, OpenAI's as keywords", () => {
    const cont = openaiRequestBody(
      {
        mode: 'chat',
        messages: [{ role: 'user', content: 'Tell me a story' }, { role: 'assistant', content: 'Once upon a' }],
        sampling: { ...sampling, topK: 0, minP: 0.05, repetitionPenalty: 1.1, presencePenalty: 0.5, stop: ['END'], topLogprobs: 5 },
        continue_final_message: true,
        add_generation_prompt: false,
      },
      'tiny',
    );
    const code = pythonCode(cont, target);
    expect(code).toContain('    extra_body={\n        "min_p": 0.05,\n        "repetition_penalty": 1.1,\n        "continue_final_message": True,\n        "add_generation_prompt": False\n    },');
    const keywords = execFileSync('python3', ['-c', 'import ast,sys; t=ast.parse(sys.stdin.read()); print(",".join(sorted(k.arg for n in ast.walk(t) if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "create" for k in n.keywords)))'], { input: code, encoding: 'utf8' }).trim();
    expect(keywords.split(',')).toEqual(['extra_body', 'logprobs', 'max_tokens', 'messages', 'model', 'presence_penalty', 'stop', 'temperature', 'top_logprobs', 'top_p']);
  });

  it('looks the model up when the console has not learned its id yet', () => {
    const unknown = openaiRequestBody({ mode: 'completion', prompt: 'Once', sampling }, MODEL_PLACEHOLDER);
    const py = pythonCode(unknown, { ...target, modelKnown: false });
    expect(py).toContain('model = client.models.list().data[0].id');
    expect(py).toContain('    model=model,');
    expect(py).toContain('client.completions.create(');
    expect(curlCode(unknown, { ...target, modelKnown: false })).toMatch(/^# MODEL_ID: the "id" that GET http:\/\/127\.0\.0\.1:8000\/v1\/models lists\ncurl http:\/\/127\.0\.0\.1:8000\/v1\/completions/);
  });

  it('writes JSON literals as Python ones, leaving strings alone', () => {
    expect(pythonLiteral({ a: true, b: [false, null], s: 'true null "x"' })).toBe('{\n    "a": True,\n    "b": [\n        False,\n        None\n    ],\n    "s": "true null \\"x\\""\n}');
  });
});
