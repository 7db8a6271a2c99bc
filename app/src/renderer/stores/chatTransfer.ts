/**
 * Chats as a JSON file the user keeps or moves: export one chat or all of them, import a
 * file back. An import is checked whole (zod): a file that is not a chats file, or any
 * message that does not parse, is refused with the place and the reason, and nothing is
 * added. Imported chats and messages whose ids are taken here get new ones; a reply that
 * was still streaming when it was exported comes in as stopped.
 */
import { z } from 'zod';
import { conversationSchema, messageSchema } from './chatPersistence.js';
import { isLive, MAX_CONVERSATIONS, MAX_MESSAGES, newId, type ChatMessage, type Conversation } from './conversations.js';

/** Marks a file as ours. */
export const CHATS_FILE_FORMAT = 'afd-chats';
export const CHATS_FILE_VERSION = 1;

/** What an export writes. */
export interface ChatsFile {
  format: typeof CHATS_FILE_FORMAT;
  version: typeof CHATS_FILE_VERSION;
  /** When it was written, epoch ms. */
  exportedAtMs: number;
  conversations: Conversation[];
}

/** Said on a reply that was streaming when its chat was exported. */
export const EXPORTED_LIVE = 'this reply was still being generated when its chat was exported; it shows the text received until then';

const fileSchema = z.object({
  format: z.literal(CHATS_FILE_FORMAT, { error: `not a chats file: "format" must be "${CHATS_FILE_FORMAT}"` }),
  version: z.literal(CHATS_FILE_VERSION, { error: `this console reads chats files of version ${CHATS_FILE_VERSION}` }),
  conversations: z.array(conversationSchema.extend({ messages: z.array(messageSchema).max(MAX_MESSAGES) })).min(1, { error: 'the file holds no chats' }).max(MAX_CONVERSATIONS),
});

/** The file for `conversations` (per-chunk arrival times left out). */
export function exportChats(conversations: readonly Conversation[], nowMs: number): ChatsFile {
  return {
    format: CHATS_FILE_FORMAT,
    version: CHATS_FILE_VERSION,
    exportedAtMs: nowMs,
    conversations: conversations.map((c) => ({ ...c, messages: c.messages.map((m) => ({ ...m, chunkTimesMs: [] })) })),
  };
}

/** A file name for an export: the chat's title, or "chats" for several. */
export function exportFileName(conversations: readonly Pick<Conversation, 'title'>[], nowMs: number): string {
  const day = new Date(nowMs).toISOString().slice(0, 10);
  const what = conversations.length === 1 ? conversations[0]!.title.replace(/[^\p{L}\p{N}]+/gu, '-').replace(/^-|-$/g, '').slice(0, 40) || 'chat' : 'chats';
  return `afd-${what}-${day}.json`;
}

/**
 * The chats in file `text`, ready to add beside `existing`: ids taken there (chats or
 * messages) are replaced. An error says what is wrong and where.
 */
export function importChats(text: string, existing: readonly Conversation[]): { ok: true; conversations: Conversation[] } | { ok: false; error: string } {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    return { ok: false, error: `the file is not JSON (${(e as Error).message}); choose a file the console exported` };
  }
  const parsed = fileSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const where = issue.path.length > 0 ? ` at ${issue.path.join('.')}` : '';
    return { ok: false, error: `cannot import the file${where}: ${issue.message}` };
  }
  const chatIds = new Set(existing.map((c) => c.id));
  const messageIds = new Set(existing.flatMap((c) => c.messages.map((m) => m.id)));
  const fresh = (id: string, taken: Set<string>, prefix: string): string => {
    const out = taken.has(id) ? newId(prefix) : id;
    taken.add(out);
    return out;
  };
  const conversations = parsed.data.conversations.map((c): Conversation => ({
    ...c,
    id: fresh(c.id, chatIds, 'c'),
    messages: c.messages
      .map(({ toolCalls, toolCall, finishReason, stats, ...rest }): ChatMessage => ({
        ...rest,
        stats: stats ?? null,
        id: fresh(rest.id, messageIds, 'm'),
        chunkTimesMs: [],
        ...(toolCalls ? { toolCalls } : {}),
        ...(toolCall ? { toolCall } : {}),
        ...(finishReason ? { finishReason } : {}),
      }))
      .filter((m) => m.role !== 'tool' || m.toolCall !== undefined)
      .map((m) => (isLive(m) ? { ...m, stage: 'stopped' as const, chatId: null, error: EXPORTED_LIVE } : m)),
  }));
  return { ok: true, conversations };
}
