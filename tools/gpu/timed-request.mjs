// One greedy /v1/completions request, timed, written as JSON whatever its outcome (the
// fault cases of tools/gpu/ep-one-gpu.sh). Node builtins only (runs on the GPU host).
//   node timed-request.mjs --url http://127.0.0.1:18030 --out r.json [--max-tokens 2000] [--timeout-ms 60000]
import { writeFileSync } from 'node:fs';
import { arg } from './cli-arg.mjs';

const url = arg('--url');
const out = arg('--out');
const maxTokens = Number(arg('--max-tokens', '2000'));
const timeoutMs = Number(arg('--timeout-ms', '60000'));
const startedAt = Date.now();
const result = { url, maxTokens, startedAt, endedAt: 0, ms: 0, status: 0, completionTokens: null, body: '' };
try {
  const models = await (await fetch(`${url}/v1/models`, { signal: AbortSignal.timeout(timeoutMs) })).json();
  const res = await fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: models.data[0].id, prompt: 'Once upon a time,', max_tokens: maxTokens, temperature: 0, ignore_eos: true }),
    signal: AbortSignal.timeout(timeoutMs),
  });
  result.status = res.status;
  const text = await res.text();
  result.body = text.slice(0, 600);
  if (res.status === 200) result.completionTokens = JSON.parse(text).usage?.completion_tokens ?? null;
} catch (e) {
  result.body = `request failed: ${e instanceof Error ? e.message : String(e)}`;
}
result.endedAt = Date.now();
result.ms = result.endedAt - startedAt;
writeFileSync(out, JSON.stringify(result, null, 2));
