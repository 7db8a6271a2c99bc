/** The router's prefix key (found without parsing the body) and its choice of a rank. */
import { describe, expect, it } from 'vitest';
import { PrefixAffinity, prefixKey, topLevelFields } from './prefixAffinity.js';

const CHAT = '/v1/chat/completions';
const body = (o: unknown): Buffer => Buffer.from(typeof o === 'string' ? o : JSON.stringify(o));
const key = (path: string, o: unknown, windowBytes?: number): string | null => prefixKey(path, body(o), windowBytes);
const system = (n: number): { role: string; content: string } => ({ role: 'system', content: `You are agent ${n}. ${'Follow the house rules. '.repeat(300)}` }); // ~7 KiB
const user = (text: string): { role: string; content: string } => ({ role: 'user', content: text });

describe('prefixKey', () => {
  it('chat: keys the messages, whatever the other fields and their order', () => {
    const messages = [system(1), user('What is 2+2?')];
    const k = key(CHAT, { model: 'tiny', messages, max_tokens: 5 });
    expect(k).toMatch(/^[0-9a-f]{16}$/);
    expect(key(CHAT, { stream: true, messages, temperature: 0.3, model: 'tiny' })).toBe(k);
    // A long shared system prompt: the window (4 KiB) lies inside it, the last user message does not count.
    expect(key(CHAT, { model: 'tiny', messages: [system(1), user('Something else entirely')] })).toBe(k);
    expect(key(CHAT, { model: 'tiny', messages: [system(2), user('What is 2+2?')] })).not.toBe(k);
    // A short prompt is keyed whole.
    expect(key(CHAT, { messages: [user('a')] })).not.toBe(key(CHAT, { messages: [user('b')] }));
    expect(key(CHAT, { messages: [user('a')], model: 'x' })).toBe(key(CHAT, { model: 'y', messages: [user('a')] }));
  });

  it('a conversation re-sent as it grows keeps its key once it is longer than the window', () => {
    const turns = [system(1), user('q1'), { role: 'assistant', content: 'a1' }];
    expect(key(CHAT, { model: 'tiny', messages: turns })).toBe(key(CHAT, { model: 'tiny', messages: [...turns, user('q2')] }));
    const short = [user('short question')];
    expect(key(CHAT, { messages: short })).not.toBe(key(CHAT, { messages: [...short, { role: 'assistant', content: 'a' }, user('q2')] }));
  });

  it('ignores a "messages" property nested in a tool schema and field names inside strings', () => {
    const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { messages: { type: 'array' } } } } }];
    const a = key(CHAT, { tools, content: '"messages": [1]', messages: [user('hello')] });
    expect(a).toBe(key(CHAT, { messages: [user('hello')], tools: [] }));
    expect(key(CHAT, { model: 'tiny', tools, note: '{"messages":[]}' })).toBeNull(); // no top-level messages
  });

  it('completions and responses: prompt; instructions then input, in that order whatever the JSON order', () => {
    expect(key('/v1/completions', { prompt: 'hi', model: 'x' })).toBe(key('/v1/completions', { model: 'y', prompt: 'hi' }));
    expect(key('/v1/completions', { prompt: [1, 2, 3] })).not.toBe(key('/v1/completions', { prompt: [1, 2, 4] }));
    const r = key('/v1/responses', { instructions: 'Be brief.', input: 'hi' });
    expect(r).toBe(key('/v1/responses', { input: 'hi', model: 'x', instructions: 'Be brief.' }));
    expect(r).not.toBe(key('/v1/responses', { instructions: 'Be brief.', input: 'ho' }));
    expect(key('/v1/responses', { input: [{ role: 'user', content: 'hi' }] })).toMatch(/^[0-9a-f]{16}$/);
    // Long instructions fill the window: the input no longer counts.
    const long = 'Rule. '.repeat(1000);
    expect(key('/v1/responses', { instructions: long, input: 'a' })).toBe(key('/v1/responses', { input: 'b', instructions: long }));
  });

  it('mixes in cache_salt; prompt_cache_key replaces the prompt', () => {
    const messages = [user('hi')];
    const plain = key(CHAT, { messages });
    expect(key(CHAT, { messages, cache_salt: 'tenant-a' })).not.toBe(plain);
    expect(key(CHAT, { messages, cache_salt: 'tenant-a' })).not.toBe(key(CHAT, { messages, cache_salt: 'tenant-b' }));
    expect(key(CHAT, { cache_salt: 'tenant-a', messages })).toBe(key(CHAT, { messages, cache_salt: 'tenant-a' }));
    expect(key(CHAT, { messages, cache_salt: null })).toBe(plain);
    const pck = key(CHAT, { messages: [user('one')], prompt_cache_key: 'user-42' });
    expect(pck).toBe(key(CHAT, { prompt_cache_key: 'user-42', messages: [user('two')] }));
    expect(pck).not.toBe(key(CHAT, { messages: [user('one')], prompt_cache_key: 'user-43' }));
    expect(pck).not.toBe(key(CHAT, { messages: [user('one')], prompt_cache_key: 'user-42', cache_salt: 's' }));
    expect(key(CHAT, { messages: [user('one')], prompt_cache_key: null })).toBe(key(CHAT, { messages: [user('one')] }));
    expect(key('/v1/responses', { input: 'x', prompt_cache_key: 'k' })).toBe(key('/v1/responses', { input: 'y', prompt_cache_key: 'k' }));
  });

  it('no key: other routes, no prompt field, not a JSON object', () => {
    expect(key('/v1/models', { messages: [user('hi')] })).toBeNull();
    expect(key(CHAT, { model: 'tiny' })).toBeNull();
    expect(key('/v1/completions', { messages: [user('hi')] })).toBeNull();
    expect(key(CHAT, '[{"messages":[]}]')).toBeNull();
    expect(key(CHAT, 'not json')).toBeNull();
    expect(key(CHAT, '')).toBeNull();
  });

  it('a huge body: the key from the window, a prompt_cache_key after 16 MiB of messages still found, quickly', () => {
    const messages = Array.from({ length: 2000 }, (_, i) => user(`${i} ${'x'.repeat(8000)} "quoted" \\ end`));
    const huge = body({ model: 'tiny', messages, max_tokens: 3 });
    expect(huge.length).toBeGreaterThan(16e6);
    const t0 = performance.now();
    const k = prefixKey(CHAT, huge);
    expect(performance.now() - t0).toBeLessThan(1000); // a few ms in practice
    expect(k).toBe(key(CHAT, { messages: messages.slice(0, 1) })); // the window lies in the first message
    const withKey = body({ model: 'tiny', messages, prompt_cache_key: 'conv-9' });
    expect(prefixKey(CHAT, withKey)).toBe(key(CHAT, { messages: [user('short')], prompt_cache_key: 'conv-9' }));
  });

  it('stops scanning after its step budget, keeping what it found', () => {
    // Deeply nested: no stack to overflow; the prompt's start was seen, its end was not.
    const nested = `{"model":"tiny","prompt":${'['.repeat(300_000)}${']'.repeat(300_000)},"prompt_cache_key":"k"}`;
    const f = topLevelFields(Buffer.from(nested), new Set(['prompt', 'prompt_cache_key']));
    expect(f.get('prompt')).toEqual({ start: 25, end: nested.length });
    expect(f.has('prompt_cache_key')).toBe(false);
    expect(prefixKey('/v1/completions', Buffer.from(nested))).toMatch(/^[0-9a-f]{16}$/);
    const small = '{"a":"x","prompt":[1,2],"b":{"prompt":1}}';
    const g = topLevelFields(Buffer.from(small), new Set(['prompt', 'a']));
    expect(small.slice(g.get('prompt')!.start, g.get('prompt')!.end)).toBe('[1,2]');
    expect(small.slice(g.get('a')!.start, g.get('a')!.end)).toBe('"x"');
    expect(topLevelFields(Buffer.from(small), new Set(['prompt']), 5).get('prompt')).toBeUndefined();
  });
});

/** A rank as the choice sees it. */
const rank = (index: number, outstandingTokens = 0, healthy = true): { index: number; outstandingTokens: number; healthy: boolean } => ({ index, outstandingTokens, healthy });
const leastOf = <B extends { outstandingTokens: number; healthy: boolean }>(list: B[]): B => list.filter((b) => b.healthy).reduce((a, b) => (b.outstandingTokens < a.outstandingTokens ? b : a));

describe('PrefixAffinity.choose', () => {
  it('the same key goes to the same rank; distinct keys spread evenly over the ranks', () => {
    const pa = new PrefixAffinity();
    const ranks = [rank(0), rank(1), rank(2), rank(3)];
    const first = pa.choose('k1', ranks, ranks[0]!);
    expect(first.outcome).toBe('rendezvous');
    expect(pa.choose('k1', ranks, ranks[0]!)).toEqual({ backend: first.backend, outcome: 'hit' });
    // Rendezvous alone (a fresh router) agrees.
    expect(new PrefixAffinity().choose('k1', ranks, ranks[0]!).backend).toBe(first.backend);
    const per = [0, 0, 0, 0];
    for (let i = 0; i < 4000; i++) per[pa.choose(`key-${i}`, ranks, ranks[0]!).backend.index]!++;
    for (const n of per) expect(n).toBeGreaterThan(850); // 1000 each, give or take
    expect(pa.counts).toMatchObject({ hit: 1, rendezvous: 4001, overloaded: 0, none: 0 });
  });

  it('no key: the least loaded rank', () => {
    const pa = new PrefixAffinity();
    const ranks = [rank(0, 50), rank(1, 10)];
    expect(pa.choose(null, ranks, ranks[1]!)).toEqual({ backend: ranks[1], outcome: 'none' });
    expect(pa.size).toBe(0);
  });

  it('an overloaded preferred rank gives way to the least loaded, which then holds the key', () => {
    const pa = new PrefixAffinity(); // over 4096 tokens more and over twice the least loaded's
    const ranks = [rank(0), rank(1)];
    const pref = pa.choose('k', ranks, ranks[0]!).backend;
    const other = ranks[1 - pref.index]!;
    pref.outstandingTokens = 4000;
    expect(pa.choose('k', ranks, other)).toEqual({ backend: pref, outcome: 'hit' }); // within the slack
    pref.outstandingTokens = 5000;
    expect(pa.choose('k', ranks, other)).toEqual({ backend: other, outcome: 'overloaded' });
    expect(pa.choose('k', ranks, other)).toEqual({ backend: other, outcome: 'hit' }); // other served it last
    other.outstandingTokens = 20_000;
    pref.outstandingTokens = 0;
    expect(pa.choose('k', ranks, pref)).toEqual({ backend: pref, outcome: 'overloaded' });
    // At high load the ratio decides: 30k against 20k is within 2x.
    pa.served('k', other);
    other.outstandingTokens = 30_000;
    pref.outstandingTokens = 20_000;
    expect(pa.choose('k', ranks, pref)).toEqual({ backend: other, outcome: 'hit' });
    const tight = new PrefixAffinity({ slackTokens: 0, loadRatio: 1.2 });
    tight.served('k', other);
    expect(tight.choose('k', ranks, pref).outcome).toBe('overloaded');
  });

  it('skips an unhealthy preferred rank (remembered or rendezvous), and forgets a restarted rank', () => {
    const pa = new PrefixAffinity();
    const ranks = [rank(0), rank(1), rank(2)];
    const pref = pa.choose('k', ranks, ranks[0]!).backend;
    pref.healthy = false;
    const least = leastOf(ranks);
    const moved = pa.choose('k', ranks, least);
    expect(moved.outcome).toBe('rendezvous');
    expect(moved.backend).not.toBe(pref);
    expect(moved.backend.healthy).toBe(true);
    // Back up: the key stays where its KV now is.
    pref.healthy = true;
    expect(pa.choose('k', ranks, least)).toEqual({ backend: moved.backend, outcome: 'hit' });
    pa.forget(moved.backend.index);
    expect(pa.choose('k', ranks, least)).toEqual({ backend: pref, outcome: 'rendezvous' });
  });

  it('remembers at most maxKeys keys, the least recently used dropped first', () => {
    const pa = new PrefixAffinity({ maxKeys: 3 });
    const ranks = [rank(0), rank(1)];
    for (const k of ['a', 'b', 'c']) pa.served(k, ranks[1]!);
    pa.served('a', ranks[1]!); // a is recent again
    pa.served('d', ranks[1]!); // drops b
    expect(pa.size).toBe(3);
    const outcome = (k: string): string => pa.choose(k, ranks, ranks[0]!).outcome;
    expect(outcome('a')).toBe('hit');
    expect(outcome('b')).toBe('rendezvous');
  });
});
