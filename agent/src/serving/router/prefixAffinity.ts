/**
 * Prefix-affine routing: each attention rank keeps its own prefix cache (KV of full
 * 16-token blocks, by content), so requests that share a long prompt prefix only reuse KV
 * when they land on the same rank. The router gives a generation request a prefix key and
 * prefers, among healthy ranks, the rank that last served that key (it holds the KV),
 * else the key's rendezvous rank (highest random weight: stable while the healthy set
 * stays, keys spread evenly), unless that rank carries much more than the least loaded
 * one, which then gets the request.
 *
 * The key, without parsing the body (it may be 16 MiB, or nested past any stack):
 * - `prompt_cache_key` when the request has one (OpenAI's routing hint for prompt
 *   caching): requests with the same key go together whatever their prompts;
 * - else a hash of the first `windowBytes` (default 4 KiB, ~1k tokens) of the prompt as
 *   the body spells it: the value of `"messages"` (chat), `"prompt"` (completions), or
 *   `"instructions"` then `"input"` (responses, in the order the prompt renders them);
 * - with `cache_salt` mixed in: requests of different salts never share KV.
 * The fields are found at the top level of the JSON object by a scan that skips strings
 * natively (Buffer.indexOf) and only tracks brackets, so a `"messages"` property in a tool's
 * schema or text inside a message never counts; the scan gives up after 2^18 steps (a
 * string or a byte outside strings), keeping what it found by then.
 *
 * What this does and does not catch, honestly:
 * - Requests whose prompts agree on their first `windowBytes` bytes get one key: a shared
 *   system prompt longer than the window sends its requests to one rank (a prefix worth
 *   caching), and a conversation a client re-sends as it grows keeps its key once it is
 *   longer than the window (the window starts at the prompt field, so the order of the
 *   other fields does not matter). Shorter prompts are hashed whole, up to the end of
 *   their field: each turn of a short conversation gets a new key and may move (little KV
 *   is lost: its prefix is under ~1k tokens).
 * - Requests sharing a prefix shorter than the window get different keys (they spread
 *   by rendezvous; a rank still reuses what it happens to hold).
 * - It is bytes, not tokens: two clients spelling the same prompt differently (whitespace,
 *   key order inside messages, \u escapes) get different keys; tools, chat_template_kwargs
 *   and the model are not part of the key, though they change the rendered prompt.
 * - A field that comes after more than 2^18 steps of scanning (e.g. after a huge array of
 *   token ids) is not seen: no key (plain load balancing), or a prompt_cache_key / salt
 *   ignored. Requests with no recognisable prompt field get no key either.
 * A wrong guess costs only locality: every rank serves every request.
 */
import { createHash } from 'node:crypto';
import type { Backend } from './Backends.js';

export interface PrefixAffinityOptions {
  /** Bytes of the prompt field hashed into the key (default 4096, ~1k tokens). */
  windowBytes?: number;
  /** Keys remembered with the rank that last served them, least recently used dropped first (default 10000). */
  maxKeys?: number;
  /**
   * The preferred rank is overloaded, and the least loaded rank gets the request, when its
   * outstanding tokens exceed the least loaded's by more than this (default 4096, about
   * one long request)...
   */
  slackTokens?: number;
  /** ...and are more than this many times the least loaded's (default 2). */
  loadRatio?: number;
}

/** How a generation request's rank was chosen (the outcome label of afd:router_prefix_affinity_total). */
export type AffinityOutcome = 'hit' | 'rendezvous' | 'overloaded' | 'none';

/** Where the prompt is, per generation route, in the order the prompt renders it. */
const PROMPT_FIELDS: Record<string, string[]> = {
  '/v1/chat/completions': ['messages'],
  '/v1/completions': ['prompt'],
  '/v1/responses': ['instructions', 'input'],
};
const SCANNED = new Set(['messages', 'prompt', 'instructions', 'input', 'prompt_cache_key', 'cache_salt']);

/** Steps (strings skipped, bytes outside strings) the field scan takes at most. */
const MAX_SCAN_STEPS = 2 ** 18;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Byte ranges of the values of the top-level fields of a JSON object body named in
 * `names` (the last one wins, as in JSON.parse), string values with their quotes. A value
 * the scan did not see the end of (cut by `maxSteps`) ends at the body's end. Not a validator: a malformed body gives whatever it gives.
 */
export function topLevelFields(body: Buffer, names: ReadonlySet<string>, maxSteps = MAX_SCAN_STEPS): Map<string, { start: number; end: number }> {
  const found = new Map<string, { start: number; end: number }>();
  let i = body.indexOf('{');
  if (i < 0 || body.subarray(0, i).toString('latin1').trim() !== '') return found;
  let depth = 0;
  let steps = 0;
  let field: string | null = null; // the top-level field whose value is being read, when it is one of `names`
  let start = -1; // where that value starts; -1 = before it
  let afterColon = false; // at depth 1, between a key's ':' and its value
  const close = (end: number): void => {
    if (field !== null && start >= 0) {
      while (end > start && body[end - 1]! <= 0x20) end--; // the value's end, not the space before ',' or '}'
      found.set(field, { start, end });
    }
    field = null;
    start = -1;
  };
  while (i < body.length && steps++ < maxSteps) {
    const c = body[i]!;
    if (c === QUOTE) {
      // A string: find its closing quote natively (a quote after an odd run of backslashes is escaped).
      let end = body.indexOf(QUOTE, i + 1);
      for (;;) {
        if (end < 0) return found;
        let slashes = 0;
        while (body[end - 1 - slashes] === BACKSLASH) slashes++;
        if (slashes % 2 === 0) break;
        if (steps++ >= maxSteps) return found;
        end = body.indexOf(QUOTE, end + 1);
      }
      if (depth === 1 && afterColon) {
        start = i;
        afterColon = false;
      } else if (depth === 1) {
        const key = body.toString('latin1', i + 1, end);
        field = names.has(key) ? key : null;
      }
      i = end + 1;
      continue;
    }
    if (c === 0x7b || c === 0x5b) {
      // { [
      if (depth === 1 && afterColon) {
        start = i;
        afterColon = false;
      }
      depth++;
    } else if (c === 0x7d || c === 0x5d) {
      // } ]
      depth--;
      if (depth === 0) {
        close(i);
        return found;
      }
    } else if (depth === 1 && c === 0x3a) afterColon = true; // :
    else if (depth === 1 && c === 0x2c) close(i); // ,
    else if (depth === 1 && afterColon && c > 0x20) {
      start = i; // a number, true, false or null
      afterColon = false;
    }
    i++;
  }
  if (field !== null && start >= 0) found.set(field, { start, end: body.length });
  return found;
}

/**
 * The prefix key of a generation request (see the file comment), or null when the route
 * is not a generation or the body has no recognisable prompt field.
 */
export function prefixKey(path: string, body: Buffer, windowBytes = 4096): string | null {
  const prompt = PROMPT_FIELDS[path];
  if (!prompt) return null;
  const f = topLevelFields(body, SCANNED);
  const text = (name: string): Buffer | null => {
    const v = f.get(name);
    return v && body[v.start] === QUOTE ? body.subarray(v.start, v.end) : null; // a string (null, numbers ... are no key or salt)
  };
  const h = createHash('sha256');
  const salt = text('cache_salt');
  if (salt) h.update('salt\0').update(salt).update('\0');
  const cacheKey = text('prompt_cache_key');
  if (cacheKey) return h.update('prompt_cache_key\0').update(cacheKey).digest('hex').slice(0, 16);
  let left = windowBytes;
  let any = false;
  for (const name of prompt) {
    const v = f.get(name);
    if (!v || left <= 0) continue;
    const end = Math.min(v.end, v.start + left);
    h.update(`${name}\0`).update(body.subarray(v.start, end)).update('\0');
    left -= end - v.start;
    any = true;
  }
  return any ? h.digest('hex').slice(0, 16) : null;
}

/** The rendezvous weight of `key` on backend `index`: a uniform 48-bit number. */
function weight(key: string, index: number): number {
  return createHash('sha256').update(`${key}\0${index}`).digest().readUIntBE(0, 6);
}

type Candidate = Pick<Backend, 'index' | 'healthy' | 'outstandingTokens'>;

/** The router's memory of keys and ranks, and its choice of a rank for a key. */
export class PrefixAffinity {
  readonly windowBytes: number;
  private readonly maxKeys: number;
  private readonly slackTokens: number;
  private readonly loadRatio: number;
  /** key -> index of the backend that last served it, least recently used first. */
  private readonly recent = new Map<string, number>();
  /** Decisions so far, per outcome. */
  readonly counts: Record<AffinityOutcome, number> = { hit: 0, rendezvous: 0, overloaded: 0, none: 0 };

  constructor(o: PrefixAffinityOptions = {}) {
    this.windowBytes = o.windowBytes ?? 4096;
    this.maxKeys = o.maxKeys ?? 10_000;
    this.slackTokens = o.slackTokens ?? 4096;
    this.loadRatio = o.loadRatio ?? 2;
  }

  keyOf(path: string, body: Buffer): string | null {
    return prefixKey(path, body, this.windowBytes);
  }

  /**
   * The backend for a request with `key`, among the healthy ones of `backends`; `least` is
   * the least loaded healthy one (Backends.pick). Counts the outcome and remembers the
   * choice (served() again if a retry moves the request).
   */
  choose<B extends Candidate>(key: string | null, backends: readonly B[], least: B): { backend: B; outcome: AffinityOutcome } {
    const decided = this.decide(key, backends, least);
    this.counts[decided.outcome]++;
    if (key !== null) this.served(key, decided.backend);
    return decided;
  }

  private decide<B extends Candidate>(key: string | null, backends: readonly B[], least: B): { backend: B; outcome: AffinityOutcome } {
    if (key === null) return { backend: least, outcome: 'none' };
    const last = this.recent.get(key);
    const remembered = last === undefined ? undefined : backends.find((b) => b.index === last && b.healthy);
    const preferred = remembered ?? this.rendezvous(key, backends) ?? least;
    if (this.overloaded(preferred, least)) return { backend: least, outcome: 'overloaded' };
    return { backend: preferred, outcome: remembered ? 'hit' : 'rendezvous' };
  }

  /** The healthy backend with the highest weight for `key`. */
  rendezvous<B extends Candidate>(key: string, backends: readonly B[]): B | undefined {
    let best: B | undefined;
    let bestWeight = -1;
    for (const b of backends) {
      if (!b.healthy) continue;
      const w = weight(key, b.index);
      if (w > bestWeight) [best, bestWeight] = [b, w];
    }
    return best;
  }

  /** Whether `b` carries too much more than `least` to be worth its cached prefix. */
  overloaded(b: Candidate, least: Candidate): boolean {
    return b.outstandingTokens > Math.max(least.outstandingTokens + this.slackTokens, least.outstandingTokens * this.loadRatio);
  }

  /** Remembers that `b` served `key` (it now holds the prefix). */
  served(key: string, b: Candidate): void {
    this.recent.delete(key);
    this.recent.set(key, b.index);
    if (this.recent.size > this.maxKeys) this.recent.delete(this.recent.keys().next().value!);
  }

  /** Forgets every key served by backend `index` (its rank restarted with an empty cache). */
  forget(index: number): void {
    for (const [k, v] of this.recent) if (v === index) this.recent.delete(k);
  }

  /** Keys remembered (for tests). */
  get size(): number {
    return this.recent.size;
  }
}
