/**
 * What of the Playground survives a reload, and how it is read back: conversations
 * (messages with their stats and tool calls, not the per-chunk arrival times), the active
 * one, mode, system prompt, sampling, response format and tools, and whether the settings
 * panel is open. Stored values are validated field by field, so one bad
 * conversation or a half-typed number does not lose the rest. The response format and
 * tools settings are kept as typed (a half-typed schema too: it is text). A reply that was still
 * streaming when the page went away comes back as stopped, with what it had so far.
 */
import { z } from 'zod';
import { chatTokenLogprobSchema } from '@afd/shared';
import { isLive, MAX_CONVERSATIONS, type ChatMessage, type ChatMode, type Conversation, type Sampling } from './conversations.js';
import type { ResponseFormatSettings } from './responseFormat.js';
import type { ToolSettings } from './toolSettings.js';

/** The persisted part of the chat store. */
export interface PersistedChats {
  mode: ChatMode;
  systemPrompt: string;
  sampling: Sampling;
  responseFormat: ResponseFormatSettings;
  tools: ToolSettings;
  conversations: Conversation[];
  activeId: string;
  /** The settings side panel: open or closed as the user left it; null until they choose (then it follows the window's width). */
  sidePanelOpen: boolean | null;
}

export const defaultSampling: Sampling = { temperature: 0.7, topP: 1, topK: 0, maxTokens: 128, seed: null, minP: 0, presencePenalty: 0, frequencyPenalty: 0, repetitionPenalty: 1, stop: [], topLogprobs: null };

/** Each sampling field as kept; one that does not parse (or is missing, from an older console) takes the fallback's. */
const samplingFields: { [K in keyof Sampling]: z.ZodType<Sampling[K]> } = {
  temperature: z.number().min(0).max(2),
  topP: z.number().gt(0).max(1),
  topK: z.int().min(0),
  maxTokens: z.int().min(1),
  seed: z.int().min(0).max(0xffffffff).nullable(),
  minP: z.number().min(0).max(1),
  presencePenalty: z.number().min(-2).max(2),
  frequencyPenalty: z.number().min(-2).max(2),
  repetitionPenalty: z.number().gt(0),
  stop: z.array(z.string().min(1)).max(16),
  topLogprobs: z.int().min(0).max(20).nullable(),
};

/** Stored sampling read field by field over `fallback`. */
function restoreSampling(stored: unknown, fallback: Sampling): Sampling {
  const o = (typeof stored === 'object' && stored !== null ? stored : {}) as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [k, schema] of Object.entries(samplingFields)) out[k] = field(schema as z.ZodType<unknown>, o[k], fallback[k as keyof Sampling]);
  return out as unknown as Sampling;
}

/** Said on a reply the page was reloaded under. */
export const INTERRUPTED = 'the page was reloaded before this reply finished; it shows the text received until then';

const num = z.number().nullable().optional();
const statsSchema = z
  .object({ ttftMs: num, decodeTokensPerSecond: num, meanItlMs: num, p95ItlMs: num, numOutputTokens: z.number(), numPromptTokens: num, totalMs: z.number() })
  .transform((s) => Object.fromEntries(Object.entries(s).filter(([, v]) => v !== null && v !== undefined)) as unknown as ChatMessage['stats']);

/** A stored message (as kept, and as a chats file carries it). */
export const messageSchema = z.object({
  id: z.string().min(1),
  role: z.enum(['system', 'user', 'assistant', 'tool']),
  content: z.string(),
  stage: z.enum(['queued', 'prefill', 'decode', 'done', 'stopped', 'error']),
  chatId: z.string().nullable(),
  startedAtMs: z.number(),
  stats: statsSchema.nullable().catch(null),
  error: z.string().nullable(),
  mode: z.enum(['chat', 'completion']),
  toolCalls: z.array(z.object({ index: z.int().min(0), id: z.string(), name: z.string(), arguments: z.string() })).optional().catch(undefined),
  toolCall: z.object({ id: z.string().min(1), name: z.string() }).optional(),
  finishReason: z.enum(['stop', 'length', 'tool_calls']).optional().catch(undefined),
  tokens: z.array(chatTokenLogprobSchema).optional().catch(undefined),
});

/** A stored conversation; its messages are checked one by one with messageSchema. */
const samplingSchema = z.record(z.string(), z.unknown()).transform((o) => restoreSampling(o, defaultSampling));

export const conversationSchema = z.object({
  id: z.string().min(1),
  own: z.object({ systemPrompt: z.string().max(100_000), sampling: samplingSchema }).optional().catch(undefined),
  title: z.string(),
  renamed: z.boolean().catch(false),
  createdAtMs: z.number(),
  updatedAtMs: z.number(),
  messages: z.array(z.unknown()),
});

/** Per field: a value that does not parse keeps the current one. */
function field<T>(schema: z.ZodType<T>, value: unknown, fallback: T): T {
  const r = schema.safeParse(value);
  return r.success ? r.data : fallback;
}

/** Sampling as kept: numbers being typed (NaN) are stored as the default. */
function persistSampling(s: Sampling): Sampling {
  const finite = (v: number, d: number): number => (Number.isFinite(v) ? v : d);
  return {
    temperature: finite(s.temperature, defaultSampling.temperature),
    topP: finite(s.topP, defaultSampling.topP),
    topK: finite(s.topK, defaultSampling.topK),
    maxTokens: finite(s.maxTokens, defaultSampling.maxTokens),
    seed: s.seed !== null && Number.isFinite(s.seed) ? s.seed : null,
    minP: finite(s.minP, defaultSampling.minP),
    presencePenalty: finite(s.presencePenalty, defaultSampling.presencePenalty),
    frequencyPenalty: finite(s.frequencyPenalty, defaultSampling.frequencyPenalty),
    repetitionPenalty: finite(s.repetitionPenalty, defaultSampling.repetitionPenalty),
    stop: s.stop,
    topLogprobs: s.topLogprobs !== null && Number.isFinite(s.topLogprobs) ? s.topLogprobs : null,
  };
}

/** The state to keep (JSON-safe; numbers being typed, NaN, are stored as the default). */
export function persistChats(s: PersistedChats): PersistedChats {
  return {
    mode: s.mode,
    systemPrompt: s.systemPrompt,
    sampling: persistSampling(s.sampling),
    responseFormat: s.responseFormat,
    tools: s.tools,
    conversations: s.conversations.slice(0, MAX_CONVERSATIONS).map((c) => ({
      ...c,
      ...(c.own ? { own: { ...c.own, sampling: persistSampling(c.own.sampling) } } : {}),
      messages: c.messages.map((m) => ({ ...m, chunkTimesMs: [] })),
    })),
    activeId: s.activeId,
    sidePanelOpen: s.sidePanelOpen,
  };
}

/**
 * Reads stored chats over the current state. Returns the merged state and the chat ids
 * of replies that were streaming when the page went away (the service may still run
 * them: the caller stops them).
 */
export function restoreChats(stored: unknown, current: PersistedChats): { state: PersistedChats; interrupted: string[] } {
  const o = (typeof stored === 'object' && stored !== null ? stored : {}) as Record<string, unknown>;
  const interrupted: string[] = [];
  const format = (o['responseFormat'] ?? {}) as Record<string, unknown>;
  const tools = (o['tools'] ?? {}) as Record<string, unknown>;
  const conversations: Conversation[] = [];
  for (const raw of Array.isArray(o['conversations']) ? o['conversations'] : []) {
    const c = conversationSchema.safeParse(raw);
    if (!c.success) continue;
    const messages: ChatMessage[] = [];
    for (const m of c.data.messages) {
      const parsed = messageSchema.safeParse(m);
      if (!parsed.success) continue;
      const { toolCalls, toolCall, finishReason, tokens, ...rest } = parsed.data;
      const msg: ChatMessage = { ...rest, chunkTimesMs: [], ...(toolCalls ? { toolCalls } : {}), ...(toolCall ? { toolCall } : {}), ...(finishReason ? { finishReason } : {}), ...(tokens ? { tokens } : {}) };
      if (msg.role === 'tool' && !msg.toolCall) continue;
      if (isLive(msg)) {
        if (msg.chatId) interrupted.push(msg.chatId);
        messages.push({ ...msg, stage: 'stopped', error: INTERRUPTED });
      } else messages.push(msg);
    }
    conversations.push({ ...c.data, messages });
  }
  const list = conversations.length > 0 ? conversations : current.conversations;
  const activeId = field(z.string(), o['activeId'], current.activeId);
  return {
    interrupted,
    state: {
      mode: field(z.enum(['chat', 'completion']), o['mode'], current.mode),
      systemPrompt: field(z.string().max(100_000), o['systemPrompt'], current.systemPrompt),
      sampling: restoreSampling(o['sampling'], current.sampling),
      responseFormat: {
        kind: field(z.enum(['text', 'json_object', 'json_schema']), format['kind'], current.responseFormat.kind),
        schemaName: field(z.string().max(200), format['schemaName'], current.responseFormat.schemaName),
        schemaText: field(z.string().max(1_000_000), format['schemaText'], current.responseFormat.schemaText),
      },
      tools: {
        toolsText: field(z.string().max(1_000_000), tools['toolsText'], current.tools.toolsText),
        toolChoice: field(z.string().max(200), tools['toolChoice'], current.tools.toolChoice),
        parallelToolCalls: field(z.boolean(), tools['parallelToolCalls'], current.tools.parallelToolCalls),
      },
      conversations: list,
      activeId: list.some((c) => c.id === activeId) ? activeId : list[0]!.id,
      sidePanelOpen: field(z.boolean().nullable(), o['sidePanelOpen'], current.sidePanelOpen),
    },
  };
}
