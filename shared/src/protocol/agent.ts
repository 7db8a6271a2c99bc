/**
 * The agent WebSocket protocol (console <-> afd-agent daemon), JSON text frames.
 *
 * Auth happens at the HTTP upgrade: the client sends `Authorization: Bearer <token>`
 * (or `?token=<token>` where headers cannot be set); a wrong token is refused before
 * any message flows. After connecting, the agent sends `hello`.
 *
 * Client -> agent: requests `{ id, method, params }`; every request gets exactly one
 * `response` with the same id. Agent -> client: responses and events (`type` field).
 * A frame that is not a valid request gets an `error` event naming the problem.
 */
import { z } from 'zod';
import { inventorySchema } from './inventory.js';
import { launchSpecSchema, logLineSchema, rankRefShape, topologyStateSchema } from './launch.js';
import { hasRestartChange, RESTART_CHANGE_EMPTY, restartPolicyChangeShape, restartPolicySchema } from './launchOptions.js';
import { metricsSnapshotSchema } from './metrics.js';
import { modelInspectParamsSchema, modelInspectResultSchema } from './modelInspect.js';
import { planProfilesResultSchema } from './planProfiles.js';
import { requestDetailSchema, requestSummarySchema } from './requestLog.js';
import { rolePhaseSchema } from './role.js';
import { decodeJsonMessage, type DecodeResult } from './wire.js';

/** Version of this protocol; the agent announces it in `hello`. */
export const AGENT_PROTOCOL_VERSION = 1;
/** Largest frame either side sends or accepts (8 MiB); also the ws maxPayload. */
export const AGENT_MAX_MESSAGE_BYTES = 8 * 1024 * 1024;
/** Query parameter carrying the token when an Authorization header cannot be set. */
export const AGENT_TOKEN_QUERY_PARAM = 'token';

/** Request id chosen by the client, echoed in the response. */
export const requestIdSchema = z.string().min(1).max(128);

const empty = z.object({});
const ack = z.object({});

/** Every method: its params schema and its result schema. */
export const agentMethods = {
  /** Liveness check. */
  ping: { params: empty, result: z.object({ /** Agent wall clock, Unix epoch ms. */ timeMs: z.number() }) },
  /** The host's CPU, memory, devices, backends and versions. */
  'inventory.get': { params: empty, result: inventorySchema },
  /** What a model directory on this host holds: config, weights, tokenizer, the roles it can run, or why it is refused. */
  'model.inspect': { params: modelInspectParamsSchema, result: modelInspectResultSchema },
  /** The planner's cost profiles on this host ($AFD_HOME/profiles/*.json, the repository's CPU profile). */
  'plan.profiles': { params: empty, result: planProfilesResultSchema },
  /** Start this agent's placements of a launch spec (replaces nothing: stop first). */
  'topology.launch': {
    params: z.object({
      /** Id shared by every agent of this launch, chosen by the console. */
      launchId: z.string().min(1),
      /** This agent's id as the console named it; placements with this agentId run here. */
      agentId: z.string().min(1),
      /** The whole launch. */
      spec: launchSpecSchema,
      /**
       * Bearer key the launch's OpenAI API requires (front router and ranks); kept out of
       * the spec, which every client sees in topology.state. Omitted = the agent's
       * $AFD_API_KEY, else open (loopback routers only).
       */
      apiKey: z.string().min(1).max(4096).optional(),
    }),
    result: z.object({
      /** The launch id. */
      launchId: z.string(),
      /** Rank processes this agent started. */
      numRanks: z.int().nonnegative(),
    }),
  },
  /** Gracefully stop every rank of this agent (SIGTERM, then SIGKILL after the grace period). */
  'topology.stop': {
    params: z.object({ /** Grace period before SIGKILL, ms (default 10000). */ graceMs: z.int().min(0).max(600_000).default(10_000) }),
    result: z.object({ /** Whether anything was running. */ stopped: z.boolean() }),
  },
  /** Stop, then launch the same spec again. */
  'topology.restart': { params: empty, result: z.object({ /** Id of the relaunch (same as before). */ launchId: z.string() }) },
  /**
   * Change the restart policy of the running launch on this agent, live (the console sends
   * it to every agent of the launch). Given fields replace the launch's; topology.state's
   * spec shows the result, and topology.restart relaunches with it. Switched to never,
   * restarts waiting out their back-off are cancelled (those ranks stay failed).
   */
  'topology.setRestartPolicy': {
    params: z
      .strictObject({
        /** The launch to change: must be the one this agent runs. */
        launchId: z.string().min(1),
        ...restartPolicyChangeShape,
      })
      .refine(hasRestartChange, { message: RESTART_CHANGE_EMPTY }),
    result: z.object({
      /** The launch changed. */
      launchId: z.string(),
      /** The policy now in effect on this agent. */
      restart: restartPolicySchema,
    }),
  },
  /** The last lines of one rank's output. */
  'logs.get': {
    params: z.object({
      ...rankRefShape,
      /** How many of the newest lines (1..10000, default 200). */
      tail: z.int().min(1).max(10_000).default(200),
    }),
    result: z.object({ /** Oldest first. */ lines: z.array(logLineSchema) }),
  },
  /** Stream new log lines (`log.lines` events) of every rank of this agent. */
  'logs.subscribe': { params: empty, result: ack },
  /** Stop streaming log lines. */
  'logs.unsubscribe': { params: empty, result: ack },
  /** Stream `metrics.snapshot` events for every ready rank. */
  'metrics.subscribe': {
    params: z.object({ /** Period per rank, ms (50..10000, default 100). */ intervalMs: z.int().min(50).max(10_000).default(100) }),
    result: z.object({ /** The period in effect. */ intervalMs: z.int() }),
  },
  /** Stop streaming metrics. */
  'metrics.unsubscribe': { params: empty, result: ack },
  /** Stream `requests.logged` events (the front router's request log); the result is the log so far. */
  'requests.subscribe': { params: empty, result: z.object({ /** The records kept, oldest first. */ requests: z.array(requestSummarySchema) }) },
  /** Stop streaming the request log. */
  'requests.unsubscribe': { params: empty, result: ack },
  /** One logged request with its bodies. */
  'requests.get': { params: z.object({ /** Its id in the log. */ id: z.int().nonnegative() }), result: requestDetailSchema },
} as const;

/** Method names of the agent protocol. */
export type AgentMethod = keyof typeof agentMethods;
/** Params a client passes to a method (defaults may be omitted). */
export type AgentParamsInput<M extends AgentMethod> = z.input<(typeof agentMethods)[M]['params']>;
/** Params as the agent sees them after validation. */
export type AgentParams<M extends AgentMethod> = z.output<(typeof agentMethods)[M]['params']>;
/** Result of a method. */
export type AgentResult<M extends AgentMethod> = z.output<(typeof agentMethods)[M]['result']>;

function request<M extends AgentMethod>(method: M) {
  return z.object({
    /** Request id, echoed by the response. */
    id: requestIdSchema,
    /** Method name. */
    method: z.literal(method),
    /** Method params. */
    params: agentMethods[method].params as (typeof agentMethods)[M]['params'],
  });
}

/** Any client -> agent request. */
export const agentRequestSchema = z.discriminatedUnion('method', [
  request('ping'),
  request('inventory.get'),
  request('model.inspect'),
  request('plan.profiles'),
  request('topology.launch'),
  request('topology.stop'),
  request('topology.restart'),
  request('topology.setRestartPolicy'),
  request('logs.get'),
  request('logs.subscribe'),
  request('logs.unsubscribe'),
  request('metrics.subscribe'),
  request('metrics.unsubscribe'),
  request('requests.subscribe'),
  request('requests.unsubscribe'),
  request('requests.get'),
]);
export type AgentRequest = z.output<typeof agentRequestSchema>;
export type AgentRequestInput = z.input<typeof agentRequestSchema>;

/** Error codes of failed requests. */
export const agentErrorCodeSchema = z.enum([
  'bad-request', // params failed validation
  'not-found', // no such rank / no launch to restart
  'busy', // a launch is running; stop it first
  'launch-failed', // a rank process could not start
  'internal', // a bug; the message says what
]);

/** A failed request's error. */
export const agentErrorSchema = z.object({
  /** Machine-readable code. */
  code: agentErrorCodeSchema,
  /** What failed, why, and what to do. */
  message: z.string(),
});

/** Successful response; validate `result` with agentMethods[method].result. */
export const agentOkResponseSchema = z.object({
  /** Message kind. */
  type: z.literal('response'),
  /** Id of the request answered. */
  id: requestIdSchema,
  /** Success flag. */
  ok: z.literal(true),
  /** The method's result. */
  result: z.unknown(),
});

/** Failed response. */
export const agentErrorResponseSchema = z.object({
  /** Message kind. */
  type: z.literal('response'),
  /** Id of the request answered. */
  id: requestIdSchema,
  /** Success flag. */
  ok: z.literal(false),
  /** Why it failed. */
  error: agentErrorSchema,
});

const event = <T extends string, S extends z.ZodRawShape>(type: T, shape: S) =>
  z.object({ /** Event kind. */ type: z.literal(type), ...shape });

const launchRank = {
  /** Launch the rank belongs to. */
  launchId: z.string(),
  ...rankRefShape,
};

/** Sent once after connecting. */
export const helloEventSchema = event('hello', {
  /** AGENT_PROTOCOL_VERSION of the agent. */
  protocolVersion: z.int(),
  /** afd-agent version. */
  agentVersion: z.string(),
  /** Host name of the agent. */
  hostname: z.string(),
});

/** Every agent -> client message except responses. */
export const agentEventSchema = z.discriminatedUnion('type', [
  helloEventSchema,
  event('rank.started', {
    ...launchRank,
    /** OS process id of the rank's role process. */
    pid: z.int().positive(),
  }),
  event('rank.progress', {
    ...launchRank,
    /** Startup phase. */
    phase: rolePhaseSchema,
    /** Work done (bytes while loading). */
    bytesDone: z.number().nonnegative(),
    /** Total work; 0 when unknown. */
    bytesTotal: z.number().nonnegative(),
    /** Optional detail. */
    message: z.string().optional(),
  }),
  event('rank.ready', {
    ...launchRank,
    /** HTTP base URL of the rank. */
    apiUrl: z.string().nullable(),
  }),
  event('rank.failed', {
    ...launchRank,
    /** Exit code; null when killed by a signal or still alive (failed event before exit). */
    exitCode: z.int().nullable(),
    /** Signal name when killed by one, e.g. "SIGKILL"; null otherwise. */
    signal: z.string().nullable(),
    /** What failed (the role's failed event, or why the agent gave up on it). */
    message: z.string(),
    /** The last lines of its output, oldest first, for a quick diagnosis. */
    lastLogLines: z.array(z.string()),
  }),
  event('rank.exited', {
    ...launchRank,
    /** Exit code; null when killed by a signal. */
    exitCode: z.int().nullable(),
    /** Signal name when killed by one; null otherwise. */
    signal: z.string().nullable(),
  }),
  event('topology.state', {
    /** The agent's topology state after a change. */
    state: topologyStateSchema,
  }),
  event('log.lines', {
    ...rankRefShape,
    /** New lines, oldest first. */
    lines: z.array(logLineSchema),
  }),
  event('metrics.snapshot', {
    /** Launch the rank belongs to. */
    launchId: z.string(),
    /** The snapshot (stats.role / stats.rank identify the rank). */
    snapshot: metricsSnapshotSchema,
  }),
  event('requests.logged', {
    /** Requests that ended since the last such event, oldest first (subscribers, batched). */
    requests: z.array(requestSummarySchema),
  }),
  event('error', {
    /** Id of the offending request when it could be read; null otherwise. */
    requestId: requestIdSchema.nullable(),
    /** What was wrong with the message. */
    message: z.string(),
  }),
]);
export type AgentEvent = z.output<typeof agentEventSchema>;
export type AgentEventType = AgentEvent['type'];

/** Any agent -> client message. */
export const agentMessageSchema = z.union([agentOkResponseSchema, agentErrorResponseSchema, agentEventSchema]);
export type AgentMessage = z.output<typeof agentMessageSchema>;

/** Decodes a client frame on the agent. On failure, answer with an `error` event carrying `error`. */
export function decodeAgentRequest(text: string): DecodeResult<AgentRequest> {
  return decodeJsonMessage(agentRequestSchema, text, AGENT_MAX_MESSAGE_BYTES, 'agent request');
}

/** Decodes an agent frame on the client. */
export function decodeAgentMessage(text: string): DecodeResult<AgentMessage> {
  return decodeJsonMessage(agentMessageSchema, text, AGENT_MAX_MESSAGE_BYTES, 'agent message');
}

/** Validates the result of a successful response against its method's schema. */
export function parseAgentResult<M extends AgentMethod>(method: M, result: unknown): DecodeResult<AgentResult<M>> {
  const parsed = agentMethods[method].result.safeParse(result);
  if (parsed.success) return { ok: true, value: parsed.data as AgentResult<M> };
  return { ok: false, error: `malformed ${method} result: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'result'}: ${i.message}`).join('; ')}` };
}

/** Best-effort read of a request id from an invalid frame, for the `error` event. */
export function requestIdOf(text: string): string | null {
  try {
    const raw: unknown = JSON.parse(text);
    if (typeof raw === 'object' && raw !== null && 'id' in raw) {
      const id = requestIdSchema.safeParse((raw as { id: unknown }).id);
      if (id.success) return id.data;
    }
  } catch {
    // not JSON: no id
  }
  return null;
}
