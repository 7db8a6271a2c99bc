/**
 * Streamed tool calls: OpenAI sends each call of a reply in fragments
 * (`choices[i].delta.tool_calls[j]`): the first fragment of a call carries its `index`,
 * `id` and function name, later ones the next piece of its arguments text. The service
 * cleans the fragments as they arrive (`toolCallFragments`); the renderer joins them by
 * index into whole calls (`foldToolCallFragments`), so a card can show a call while it is
 * still being written.
 */
import type { ChatToolCallDelta } from '@afd/shared';

/** A tool call as far as its fragments have told it. */
export interface StreamedToolCall {
  /** Position of the call in the reply (OpenAI's `index`). */
  index: number;
  /** Call id; empty until the fragment that carries it arrived. */
  id: string;
  /** Function name; empty until known. */
  name: string;
  /** Arguments text so far (JSON once complete). */
  arguments: string;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/**
 * The tool-call fragments of one stream delta, in the bridge's shape: entries without a
 * whole-number index are dropped, and null fields (some servers send `"id": null` on later
 * fragments) are left out. Empty when the delta has none.
 */
export function toolCallFragments(raw: unknown): ChatToolCallDelta[] {
  if (!Array.isArray(raw)) return [];
  const out: ChatToolCallDelta[] = [];
  for (const item of raw as unknown[]) {
    if (typeof item !== 'object' || item === null) continue;
    const o = item as Record<string, unknown>;
    const index = o['index'];
    if (typeof index !== 'number' || !Number.isInteger(index) || index < 0) continue;
    const d: ChatToolCallDelta = { index };
    const id = str(o['id']);
    if (id !== undefined) d.id = id;
    if (o['type'] === 'function') d.type = 'function';
    const fn = o['function'];
    if (typeof fn === 'object' && fn !== null) {
      const name = str((fn as Record<string, unknown>)['name']);
      const args = str((fn as Record<string, unknown>)['arguments']);
      if (name !== undefined || args !== undefined) d.function = { ...(name !== undefined ? { name } : {}), ...(args !== undefined ? { arguments: args } : {}) };
    }
    out.push(d);
  }
  return out;
}

/**
 * `calls` with `fragments` folded in, ordered by index (a new array; `calls` is not
 * changed). A fragment with a new index starts a call; an id or name fills in what is
 * still empty (a repeated one changes nothing); arguments pieces are appended.
 */
export function foldToolCallFragments(calls: readonly StreamedToolCall[], fragments: readonly ChatToolCallDelta[]): StreamedToolCall[] {
  if (fragments.length === 0) return calls as StreamedToolCall[];
  const byIndex = new Map(calls.map((c) => [c.index, { ...c }]));
  for (const f of fragments) {
    let c = byIndex.get(f.index);
    if (!c) byIndex.set(f.index, (c = { index: f.index, id: '', name: '', arguments: '' }));
    if (f.id && c.id === '') c.id = f.id;
    if (f.function?.name && c.name === '') c.name = f.function.name;
    if (f.function?.arguments) c.arguments += f.function.arguments;
  }
  return [...byIndex.values()].sort((a, b) => a.index - b.index);
}

/** The arguments pretty-printed when they are complete JSON, else as they stand (still streaming, or not JSON). */
export function prettyArguments(text: string): string {
  if (text.trim() === '') return '';
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}
