/**
 * Console bridge: the channels between the renderer and ConsoleService (Electron main,
 * or the headless web host). One map names every channel with its schemas, so the
 * preload script and the web bridge validate generically:
 * - invoke channels: renderer sends `request`, ConsoleService answers `response`;
 * - push channels: ConsoleService sends `payload` to the renderer.
 * The browser-mode wire envelope (`bridgeWireMessageSchema`) carries both over one socket.
 */
import { z } from 'zod';
import { servedModelInfoSchema } from './servedModel.js';
import { topologyPlanSchema } from '../topology/plan.js';
import { topologyInputSchema } from '../topology/spec.js';
import { inventorySchema } from './inventory.js';
import { gpuShareStateSchema } from './gpuSharing.js';
import { launchSpecSchema, logLineSchema, rankRefShape, rankStateSchema, topologyStateSchema } from './launch.js';
import { hasRestartChange, RESTART_CHANGE_EMPTY, restartPolicyChangeShape, restartPolicySchema } from './launchOptions.js';
import { chatStartSchema, chatTokenLogprobSchema, chatToolCallDeltaSchema } from './chat.js';
import { metricsSnapshotSchema } from './metrics.js';
import { chartHistorySchema } from './chartHistory.js';
import { modelInspectParamsSchema, modelInspectResultSchema } from './modelInspect.js';
import { planProfilesResultSchema } from './planProfiles.js';
import { requestDetailSchema, requestSummarySchema } from './requestLog.js';
import { decodeJsonMessage, validateMessage, type DecodeResult } from './wire.js';

/** Largest web-bridge frame (same budget as the agent socket: 8 MiB). */
export const BRIDGE_MAX_MESSAGE_BYTES = 8 * 1024 * 1024;

/** An agent connection as the console tracks it (the token is never sent back). */
export const agentInfoSchema = z.object({
  /** Console-assigned id, used in placements. */
  agentId: z.string(),
  /** WebSocket URL, e.g. "ws://10.0.0.2:7070". */
  url: z.string(),
  /**
   * connecting; connected; unreachable (connected, but pings go unanswered: a partition or
   * a host that went down; ranks there keep running); disconnected (will retry);
   * unauthorized (bad token, no retry); error.
   */
  state: z.enum(['connecting', 'connected', 'unreachable', 'disconnected', 'unauthorized', 'error']),
  /** Why the agent is not connected; null when connected. */
  message: z.string().nullable(),
  /** Host inventory once connected; null before. */
  inventory: inventorySchema.nullable(),
  /** The agent's topology state; null before it reports one. */
  topology: topologyStateSchema.nullable(),
  /** Round trip of the last ping, ms; null before the first. */
  latencyMs: z.number().nonnegative().nullable(),
});
export type AgentInfo = z.infer<typeof agentInfoSchema>;

const empty = z.object({});
const chatId = z.string().min(1);

/** Progress of a launch across all agents (push `launch.progress`, invoke `launch.get`). */
export const launchProgressSchema = z.object({
  /** Launch id. */
  launchId: z.string(),
  /** Overall state: launching, running (all ranks ready), stopping, stopped, failed. */
  state: z.enum(['launching', 'running', 'stopping', 'stopped', 'failed']),
  /** Every rank of the launch. */
  ranks: z.array(rankStateSchema),
  /** Front router URL once running; null before. */
  routerUrl: z.string().nullable(),
  /** Summary of a failure; null otherwise. */
  message: z.string().nullable(),
  /**
   * After a failure the console stops every rank of the launch on every agent, so none
   * waits for a peer that will never come: what it stopped; null before any failure.
   */
  cleanup: z
    .object({
      /** stopping: stop requests are out; done: every agent answered. */
      state: z.enum(['stopping', 'done']),
      /** The ranks that were still running, per agent, e.g. "agent b: attention 0, attention 1". */
      stopped: z.array(z.string()),
      /** Agents whose stop failed, with why. */
      problems: z.array(z.string()),
    })
    .nullable(),
  /** The model the running topology serves (from its /v1/models); null before running or when it says nothing. */
  model: servedModelInfoSchema.nullable().default(null),
  /** The id the API lists first in GET /v1/models: what requests name as `model`; null before running or when it lists none. */
  modelId: z.string().nullable().default(null),
  /** Whether the API at routerUrl requires a bearer key, as the agent hosting it says; null when not running or not said. */
  apiKeyRequired: z.boolean().nullable().default(null),
  /** Every GPU of the launch, per agent: which ranks it holds and how they share it (MPS or time slices), as each agent reported. */
  gpus: z.array(gpuShareStateSchema).default([]),
  /**
   * The restart policy at work (launch spec restart on-failure): how many times the agents
   * restarted a rank of this launch, and why the last one died; absent before the first.
   */
  recovery: z
    .object({
      /** Rank restarts so far, summed over every rank and agent. */
      restarts: z.int().min(0),
      /** One line: which rank died last and how, e.g. "ffn rank 0 on agent local was killed by SIGKILL"; null when not seen. */
      lastCause: z.string().nullable(),
    })
    .optional(),
  /** The restart policy in effect, as the agents report it (the Launch screen's switch changes it live); absent from older consoles. */
  restart: restartPolicySchema.optional(),
});
export type LaunchProgress = z.infer<typeof launchProgressSchema>;

/** A request of a front router's log, with the agent whose router logged it. */
export const loggedRequestSchema = requestSummarySchema.extend({
  /** Agent hosting the front router. */
  agentId: z.string(),
});
export type LoggedRequest = z.infer<typeof loggedRequestSchema>;

/** Invoke channels: renderer -> ConsoleService request, and its response. */
export const bridgeInvokeChannels = {
  /** Connect to an agent. */
  'agents.add': {
    request: z.object({
      /** ws:// or wss:// URL of the agent. */
      url: z.string().regex(/^wss?:\/\/\S+$/, 'must be a ws:// or wss:// URL, e.g. ws://127.0.0.1:7070'),
      /** Agent auth token. */
      token: z.string().min(1),
    }),
    response: agentInfoSchema,
  },
  /** Disconnect and forget an agent. */
  'agents.remove': { request: z.object({ /** Agent to remove. */ agentId: z.string() }), response: empty },
  /** Every known agent. */
  'agents.list': { request: empty, response: z.object({ /** Known agents. */ agents: z.array(agentInfoSchema) }) },
  /** Check a topology and get its plan (world order, blocks, control senders). */
  'topology.validate': {
    request: z.object({ /** Name ("3A2F") or structured spec. */ topology: topologyInputSchema }),
    response: z.object({
      /** Whether every rule holds. */
      valid: z.boolean(),
      /** One message per broken rule (empty when valid). */
      problems: z.array(z.string()),
      /** The plan when valid; null otherwise. */
      plan: topologyPlanSchema.nullable(),
    }),
  },
  /** Ask an agent what a model directory on its host holds (while the user types the path). */
  'model.inspect': {
    request: modelInspectParamsSchema.extend({ /** Agent whose host has the directory. */ agentId: z.string().min(1) }),
    response: modelInspectResultSchema,
  },
  /** The planner's cost profiles an agent has on its host (the Plan screen). */
  'plan.profiles': { request: z.object({ /** Agent to ask. */ agentId: z.string().min(1) }), response: planProfilesResultSchema },
  /** Launch a topology over the agents named in its placements. */
  'topology.launch': { request: launchSpecSchema, response: z.object({ /** Id of the launch. */ launchId: z.string() }) },
  /** Stop the running topology on every agent. */
  'topology.stop': { request: empty, response: z.object({ /** Whether anything was running. */ stopped: z.boolean() }) },
  /** The current launch (for a renderer that opens after it began); null when none. */
  'launch.get': { request: empty, response: z.object({ /** The launch's progress, or null. */ launch: launchProgressSchema.nullable() }) },
  /** Stop and relaunch the same spec. */
  'topology.restart': { request: empty, response: z.object({ /** Id of the relaunch. */ launchId: z.string() }) },
  /** Change the current launch's restart policy on every agent of it, live (the Launch screen's switch). */
  'topology.setRestartPolicy': {
    request: z.strictObject(restartPolicyChangeShape).refine(hasRestartChange, { message: RESTART_CHANGE_EMPTY }),
    response: z.object({ /** The policy now in effect. */ restart: restartPolicySchema }),
  },
  /** The newest log lines of one rank. */
  'logs.get': {
    request: z.object({
      /** Agent running the rank. */
      agentId: z.string(),
      ...rankRefShape,
      /** Number of newest lines (default 200). */
      tail: z.int().min(1).max(10_000).default(200),
    }),
    response: z.object({ /** Oldest first. */ lines: z.array(logLineSchema) }),
  },
  /** Start a streamed chat or completion against the running topology's API. */
  'chat.start': { request: chatStartSchema, response: z.object({ /** Id used by chat.delta/done/error. */ chatId }) },
  /** Abort a streamed chat. */
  'chat.stop': { request: z.object({ /** The chat to stop. */ chatId }), response: z.object({ /** Whether it was still running. */ stopped: z.boolean() }) },
  /**
   * The Dashboard's chart history of the current launch, kept by the console so that a
   * renderer that (re)loads draws the last 15 minutes at once.
   */
  'metrics.history': {
    request: empty,
    response: z.object({
      /** The launch the history belongs to; null before any metrics came. */
      launchId: z.string().nullable(),
      /** The chart series, downsampled. */
      history: chartHistorySchema,
    }),
  },
  /** The request logs of every agent's front router (the newest REQUEST_LOG_CAPACITY of each). */
  'requests.list': { request: empty, response: z.object({ /** Oldest first. */ requests: z.array(loggedRequestSchema) }) },
  /** One logged request with its bodies. */
  'requests.get': {
    request: z.object({ /** Agent whose router logged it. */ agentId: z.string(), /** Its id in that log. */ id: z.int().nonnegative() }),
    response: requestDetailSchema,
  },
  /**
   * The API key the console sends with its launches and chats (start's --api-key, else
   * $AFD_API_KEY): whether it holds one, and the key itself only when the user asked to see it.
   */
  'api.key': {
    request: z.object({ /** Return the key itself (the user asked to see or copy it). */ reveal: z.boolean().default(false) }),
    response: z.object({
      /** Whether the console holds a key. */
      held: z.boolean(),
      /** The key when revealed and held; null otherwise. */
      apiKey: z.string().nullable(),
    }),
  },
} as const;

/** Push channels: ConsoleService -> renderer. */
export const bridgePushChannels = {
  /** Every agent after any change. */
  'agents.state': z.object({ /** Known agents. */ agents: z.array(agentInfoSchema) }),
  /** Progress of the current launch across all agents. */
  'launch.progress': launchProgressSchema,
  /** One rank's metrics (~10 Hz per rank). */
  'metrics.snapshot': z.object({
    /** Agent running the rank. */
    agentId: z.string(),
    /** Launch id. */
    launchId: z.string(),
    /** The snapshot. */
    snapshot: metricsSnapshotSchema,
  }),
  /** New log lines of one rank. */
  'logs.lines': z.object({
    /** Agent running the rank. */
    agentId: z.string(),
    ...rankRefShape,
    /** Oldest first. */
    lines: z.array(logLineSchema),
  }),
  /** Generated text of a chat, one or more tokens. */
  'chat.delta': z.object({
    /** The chat. */
    chatId,
    /** Detokenized text of the new token(s); empty when the chunk carried only tool-call fragments. */
    text: z.string(),
    /** Fragments of tool calls (OpenAI's delta.tool_calls), to be joined by index; absent when none. */
    toolCalls: z.array(chatToolCallDeltaSchema).optional(),
    /** The new tokens with their log-probabilities, when the request asked for them (sampling.topLogprobs); absent otherwise. */
    tokens: z.array(chatTokenLogprobSchema).optional(),
    /** prefill: the first token (its latency is the TTFT); decode: later tokens. */
    stage: z.enum(['prefill', 'decode']),
    /** Timings measured by ConsoleService. */
    timings: z.object({
      /** Since chat.start, ms. */
      sinceStartMs: z.number().nonnegative(),
      /** Since the previous delta (or start for the first), ms. */
      sincePrevMs: z.number().nonnegative(),
    }),
  }),
  /** A chat finished. */
  'chat.done': z.object({
    /** The chat. */
    chatId,
    /** stop: end of sequence or stop string; length: maxTokens reached; tool_calls: the model called tools; aborted: chat.stop. */
    finishReason: z.enum(['stop', 'length', 'tool_calls', 'aborted']),
    /** Token usage. */
    usage: z.object({
      /** Prompt tokens. */
      promptTokens: z.int().nonnegative(),
      /** Generated tokens. */
      completionTokens: z.int().nonnegative(),
    }),
    /** Timings. */
    timings: z.object({
      /** Time to first token, ms; null when no token was generated. */
      ttftMs: z.number().nonnegative().nullable(),
      /** Whole request, ms. */
      totalMs: z.number().nonnegative(),
      /** Generated tokens per second after the first token. */
      tokensPerSecond: z.number().nonnegative(),
    }),
  }),
  /** The API accepted a chat (response headers arrived): it leaves the queued stage. */
  'chat.accepted': z.object({
    /** The chat. */
    chatId,
    /** Since chat.start, ms. */
    sinceStartMs: z.number().nonnegative(),
    /** The model id the request named (from the API's /v1/models); absent when not known. */
    model: z.string().optional(),
  }),
  /** Requests a front router logged since the last push (batched), oldest first. */
  'requests.logged': z.object({
    /** Agent hosting the front router. */
    agentId: z.string(),
    /** The requests. */
    requests: z.array(requestSummarySchema),
    /** True: `requests` is the agent's whole log (sent after each (re)connect), replacing what was held for it. */
    replace: z.boolean().default(false),
  }),
  /** A chat failed. */
  'chat.error': z.object({
    /** The chat. */
    chatId,
    /** What failed and what to do. */
    message: z.string(),
  }),
} as const;

/** Invoke channel names. */
export type BridgeInvokeChannel = keyof typeof bridgeInvokeChannels;
/** Push channel names. */
export type BridgePushChannel = keyof typeof bridgePushChannels;
/** What the renderer passes (defaults may be omitted). */
export type BridgeRequestInput<C extends BridgeInvokeChannel> = z.input<(typeof bridgeInvokeChannels)[C]['request']>;
/** A validated request as ConsoleService sees it. */
export type BridgeRequest<C extends BridgeInvokeChannel> = z.output<(typeof bridgeInvokeChannels)[C]['request']>;
/** A response. */
export type BridgeResponse<C extends BridgeInvokeChannel> = z.output<(typeof bridgeInvokeChannels)[C]['response']>;
/** A push payload. */
export type BridgePush<C extends BridgePushChannel> = z.output<(typeof bridgePushChannels)[C]>;

/** The facade the preload (or web bridge client) exposes to the renderer. */
export interface ConsoleBridge {
  /** Calls an invoke channel; rejects with the service's error message. */
  invoke<C extends BridgeInvokeChannel>(channel: C, request: BridgeRequestInput<C>): Promise<BridgeResponse<C>>;
  /** Listens to a push channel; returns the unsubscribe function. */
  on<C extends BridgePushChannel>(channel: C, listener: (payload: BridgePush<C>) => void): () => void;
}

export function isBridgeInvokeChannel(name: string): name is BridgeInvokeChannel {
  return Object.hasOwn(bridgeInvokeChannels, name);
}
export function isBridgePushChannel(name: string): name is BridgePushChannel {
  return Object.hasOwn(bridgePushChannels, name);
}

/** Validates a request for a channel name that came from an untrusted side. */
export function validateBridgeRequest(channel: string, payload: unknown): DecodeResult<unknown> {
  if (!isBridgeInvokeChannel(channel)) return { ok: false, error: `unknown bridge channel "${channel}"` };
  return validateMessage(bridgeInvokeChannels[channel].request, payload, `${channel} request`);
}
/** Validates a response of an invoke channel. */
export function validateBridgeResponse(channel: BridgeInvokeChannel, payload: unknown): DecodeResult<unknown> {
  return validateMessage(bridgeInvokeChannels[channel].response, payload, `${channel} response`);
}
/** Validates a push payload for a channel name that came from an untrusted side. */
export function validateBridgePush(channel: string, payload: unknown): DecodeResult<unknown> {
  if (!isBridgePushChannel(channel)) return { ok: false, error: `unknown bridge push channel "${channel}"` };
  return validateMessage(bridgePushChannels[channel], payload, `${channel} push`);
}

const bridgeCallId = z.string().min(1).max(128);

/** Browser-mode envelope over the web bridge socket. */
export const bridgeWireMessageSchema = z.discriminatedUnion('kind', [
  z.object({
    /** Renderer -> service call. */
    kind: z.literal('invoke'),
    /** Call id, echoed by the result. */
    id: bridgeCallId,
    /** Invoke channel name. */
    channel: z.string(),
    /** The request (validated per channel). */
    payload: z.unknown(),
  }),
  z.object({
    /** Service -> renderer answer. */
    kind: z.literal('result'),
    /** Id of the call answered. */
    id: bridgeCallId,
    /** Whether the call succeeded. */
    ok: z.boolean(),
    /** The response when ok. */
    payload: z.unknown().optional(),
    /** What failed and what to do, when not ok. */
    error: z.string().optional(),
  }),
  z.object({
    /** Service -> renderer push. */
    kind: z.literal('push'),
    /** Push channel name. */
    channel: z.string(),
    /** The payload (validated per channel). */
    payload: z.unknown(),
  }),
]);
export type BridgeWireMessage = z.output<typeof bridgeWireMessageSchema>;

/** Decodes one web-bridge frame (the envelope only; validate payloads per channel). */
export function decodeBridgeWireMessage(text: string): DecodeResult<BridgeWireMessage> {
  return decodeJsonMessage(bridgeWireMessageSchema, text, BRIDGE_MAX_MESSAGE_BYTES, 'bridge message');
}
