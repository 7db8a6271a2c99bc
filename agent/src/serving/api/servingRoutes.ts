/**
 * The routes of a serving (attention or colocated) rank, one table: the OpenAI API under
 * /v1 and vLLM's /tokenize and /detokenize. POST bodies must be JSON (vLLM's rule); a
 * generation is refused with 503 while the engine cannot serve, tokenisation is not.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApiError } from './ApiError.js';
import { markArrival, markStage, type PreprocessStage } from '../metrics/requestPreprocess.js';
import { readJsonBody, requireJsonContentType } from './httpUtil.js';
import type { ModelRoutes } from './modelRoutes.js';
import type { OpenAiRoutes } from './openaiRoutes.js';
import type { ResponsesRoutes } from './responses/ResponsesRoutes.js';
import type { TokenizeRoutes } from './tokenizeRoutes.js';

export interface ServingRouteSet {
  models: ModelRoutes;
  openai: OpenAiRoutes;
  responses: ResponsesRoutes;
  tokenize: TokenizeRoutes;
}

type PostHandler = (routes: ServingRouteSet, body: unknown, req: IncomingMessage, res: ServerResponse) => Promise<void> | void;

/** POST routes with a JSON body; `generates`: needs the engine ready. */
const POSTS: Record<string, { handle: PostHandler; generates: boolean }> = {
  '/v1/completions': { handle: (r, body, req, res) => r.openai.completions(body, req, res), generates: true },
  '/v1/chat/completions': { handle: (r, body, req, res) => r.openai.chat(body, req, res), generates: true },
  '/v1/responses': { handle: (r, body, req, res) => r.responses.create(body, req, res), generates: true },
  '/tokenize': { handle: (r, body, _req, res) => r.tokenize.tokenize(body, res), generates: false },
  '/detokenize': { handle: (r, body, _req, res) => r.tokenize.detokenize(body, res), generates: false },
};

const MODEL_PREFIX = '/v1/models/';

/** Whether `path` belongs to the serving routes (a rank that has none answers 503 or 404 for it). */
export function isServingPath(path: string): boolean {
  return path.startsWith('/v1/') || Object.hasOwn(POSTS, path);
}

/** Whether `path` is a POST route that takes a JSON body (the front router checks its Content-Type before forwarding). */
export function isJsonPostRoute(path: string): boolean {
  return Object.hasOwn(POSTS, path);
}

export interface ServeOptions {
  maxBodyBytes: number;
  /** Why the engine cannot generate now; null when it can. */
  notReady: () => string | null;
  /** Observes a generation's pre-processing stages (afd:request_preprocess_seconds). */
  preprocess?: (stage: PreprocessStage, seconds: number) => void;
}

/** Serves a request on a serving path: a route, else 405 (known path, other method) or 404. */
export async function serveRoute(routes: ServingRouteSet, method: string, path: string, req: IncomingMessage, res: ServerResponse, o: ServeOptions): Promise<void> {
  const get = method === 'GET' || method === 'HEAD';
  if (get && path === '/v1/models') return routes.models.list(res);
  if (get && path.startsWith(MODEL_PREFIX) && path.length > MODEL_PREFIX.length) return routes.models.retrieve(path.slice(MODEL_PREFIX.length), res);
  const post = Object.hasOwn(POSTS, path) ? POSTS[path] : undefined;
  if (post && method === 'POST') {
    requireJsonContentType(req);
    if (post.generates && o.preprocess) markArrival(req, o.preprocess);
    const body = await readJsonBody(req, o.maxBodyBytes);
    markStage(req, 'body');
    const reason = post.generates ? o.notReady() : null;
    if (reason !== null) throw new ApiError(503, 'service_unavailable', `the engine is not ready (${reason}); retry later`, 'not_ready');
    return post.handle(routes, body, req, res);
  }
  if (post || path === '/v1/models' || path.startsWith(MODEL_PREFIX)) {
    throw new ApiError(405, 'invalid_request_error', `${method} is not allowed on ${path}`, 'method_not_allowed');
  }
  throw new ApiError(404, 'invalid_request_error', `no route ${method} ${path}; see ${ROUTE_LIST}`, 'not_found');
}

/** Every route, for the 404's message. */
export const ROUTE_LIST = 'GET /v1/models, GET /v1/models/{id}, POST /v1/completions, POST /v1/chat/completions, POST /v1/responses, POST /tokenize, POST /detokenize, GET /health, /metrics, /version';
