/** Test helper: an API server over a FakeEngine on a loopback ephemeral port. */
import { corsConfigSchema, type CorsConfigInput, type ToolCallParserName } from '@afd/shared';
import { createApiServer, type ApiServer } from '../createApiServer.js';
import type { ServingOptions } from '../ServingEngine.js';
import { FakeEngine, type FakeEngineOptions } from './FakeEngine.js';
import type { TextTokenizer } from '../tokenizer/TextTokenizer.js';
import { qwenTokenizer } from './qwenTokenizer.js';

export interface TestServer {
  url: string;
  api: ApiServer;
  engine: FakeEngine;
  close(): Promise<void>;
}

export const testServingOptions: ServingOptions = {
  scheduler: { maxNumSeqs: 64, maxNumBatchedTokens: 256, longPrefillTokenThreshold: 0, dbo: { enabled: false, decodeTokenThreshold: 32, prefillTokenThreshold: 512 } },
  maxQueuedRequests: 256,
};

export interface TestServerOptions {
  engine?: FakeEngineOptions;
  serving?: Partial<ServingOptions>;
  apiKey?: string;
  notReady?: () => string | null;
  /** CORS (the api section's fields); default: no origin allowed. */
  cors?: CorsConfigInput;
  /** The model's tokenizer (default: Qwen3's). */
  tokenizer?: TextTokenizer;
  /** --tool-call-parser (default auto). */
  toolCallParser?: ToolCallParserName | 'auto';
}

export async function startTestServer(o: TestServerOptions = {}): Promise<TestServer> {
  const engine = new FakeEngine(o.engine);
  const api = createApiServer({
    engine,
    tokenizer: o.tokenizer ?? (await qwenTokenizer()),
    servedModelName: 'tiny',
    modelPath: '/models/tiny',
    serving: { ...testServingOptions, ...o.serving },
    apiKey: o.apiKey,
    version: '0.0.0-test',
    externalNotReady: o.notReady,
    cors: corsConfigSchema.parse(o.cors ?? {}),
    ...(o.toolCallParser ? { toolCallParser: o.toolCallParser } : {}),
  });
  const url = await api.http.listen(0, '127.0.0.1');
  return { url, api, engine, close: () => api.close() };
}
