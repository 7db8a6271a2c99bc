import { describe, expect, it } from 'vitest';
import { parseJsonBody, parseJsonHere } from './jsonParser.js';

const bytes = (s: string): Buffer => Buffer.from(s, 'utf8');

/** Event-loop turns that ran while `p` was pending (a parse on the loop allows none). */
async function turnsWhile<T>(p: Promise<T>): Promise<{ value: T; turns: number }> {
  let turns = 0;
  let done = false;
  const spin = (): void => {
    if (done) return;
    turns++;
    setImmediate(spin);
  };
  setImmediate(spin);
  const value = await p;
  done = true;
  return { value, turns };
}

describe('parseJsonBody', () => {
  it('parses a small body on the calling thread', async () => {
    expect(await parseJsonBody(bytes('{"a":[1,2,"é"]}'))).toEqual({ ok: true, value: { a: [1, 2, 'é'] } });
  });

  it('parses a large body off the event loop, the same value as here, while the loop keeps turning', async () => {
    const body = bytes(JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hello wörld, '.repeat(1_000_000) }], n: 1.5 }));
    const expected = parseJsonHere(body);
    const { value, turns } = await turnsWhile(parseJsonBody(body));
    expect(value).toEqual(expected);
    expect(body.byteLength).toBe(0); // its own allocation: moved to the thread, not copied
    expect((value as { ok: true; value: { messages: { content: string }[] } }).value.messages[0]!.content.length).toBe(13_000_000);
    expect(turns).toBeGreaterThan(3);
  });

  it('gives a large invalid or empty body the same outcome as a parse here', async () => {
    const bad = Buffer.concat([bytes('{"prompt": "'), Buffer.alloc(400_000, 'x'), bytes('",}')]);
    const expected = parseJsonHere(bad);
    const got = await parseJsonBody(bad);
    expect(got).toEqual(expected);
    expect(got).toMatchObject({ ok: false, empty: false, message: expect.stringMatching(/JSON/) });
    expect(await parseJsonBody(Buffer.alloc(300_000, ' '))).toEqual({ ok: false, empty: true, message: 'empty' });
  });

  it('parses here what the thread cannot send back (nested deeper than structured clone goes), the same value', async () => {
    const text = `{"prompt":${'['.repeat(200_000)}${']'.repeat(200_000)}}`;
    const expected = parseJsonHere(bytes(text));
    expect(expected.ok).toBe(true);
    const got = await parseJsonBody(bytes(text));
    expect(got.ok).toBe(true);
    let depth = 0;
    for (let v = (got as { value: { prompt: unknown } }).value.prompt; Array.isArray(v); v = v[0]) depth++;
    expect(depth).toBe(200_000);
    expect(await parseJsonBody(bytes('{"after": "the thread still serves"}'), 1)).toEqual({ ok: true, value: { after: 'the thread still serves' } });
  });

  it('parses a slice of a shared buffer as that slice only (copied: the buffer stays), several at once', async () => {
    const whole = bytes(`${'['.padEnd(10, ' ')}${JSON.stringify({ k: 'v'.repeat(300_000) })}]`);
    const slice = whole.subarray(10, whole.length - 1);
    const [a, b] = await Promise.all([parseJsonBody(slice, 1), parseJsonBody(bytes('[true]'), 1)]);
    expect(a).toEqual({ ok: true, value: { k: 'v'.repeat(300_000) } });
    expect(b).toEqual({ ok: true, value: [true] });
    expect(whole.byteLength).toBeGreaterThan(300_000);
  });
});
