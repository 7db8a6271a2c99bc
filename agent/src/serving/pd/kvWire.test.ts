import { describe, expect, it } from 'vitest';
import { FrameDecoder, WireFrameError, encodeFrame, maxFramePayloadBytes, maxHeaderBytes, type WireFrame } from './kvWire.js';
import { clientMessageSchema, parseMessage, serverMessageSchema } from './kvMessages.js';

function bytesOf(frames: Array<[object, Uint8Array?]>): Buffer {
  return Buffer.concat(frames.flatMap(([h, p]) => encodeFrame(h, p)));
}

function simplify(frames: WireFrame[]): Array<{ header: Record<string, unknown>; payload: number[] }> {
  return frames.map((f) => ({ header: f.header, payload: [...f.payload] }));
}

const sample: Array<[object, Uint8Array?]> = [
  [{ type: 'hello', version: 1, launchId: 'lé-1' }],
  [{ type: 'kv', id: 'a', blockOffset: 0, numBlocks: 1, totalBytes: 5, payloadBytes: 5 }, Uint8Array.from([1, 2, 3, 4, 5])],
  [{ type: 'done', id: 'a', prefillMs: 2, cachedTokens: 0 }],
  [{ type: 'part', id: 'b', payloadBytes: 3 }, Uint8Array.from([9, 8, 7])],
];

describe('kvWire framing', () => {
  it('decodes a stream split at every byte boundary, and byte by byte', () => {
    const stream = bytesOf(sample);
    const whole = simplify(new FrameDecoder().push(stream));
    expect(whole.map((f) => f.header.type)).toEqual(['hello', 'kv', 'done', 'part']);
    expect(whole[1]!.payload).toEqual([1, 2, 3, 4, 5]);
    expect(whole[0]!.header.launchId).toBe('lé-1');
    for (let cut = 0; cut <= stream.length; cut++) {
      const d = new FrameDecoder();
      const frames = [...d.push(stream.subarray(0, cut)), ...d.push(stream.subarray(cut))];
      expect(simplify(frames), `split at ${cut}`).toEqual(whole);
      expect(d.bufferedBytes).toBe(0);
    }
    const d = new FrameDecoder();
    const oneByOne: WireFrame[] = [];
    for (let i = 0; i < stream.length; i++) oneByOne.push(...d.push(stream.subarray(i, i + 1)));
    expect(simplify(oneByOne)).toEqual(whole);
  });

  it('yields nothing for a partial frame and keeps its bytes', () => {
    const stream = bytesOf(sample.slice(1, 2));
    const d = new FrameDecoder();
    expect(d.push(stream.subarray(0, stream.length - 1))).toEqual([]);
    expect(d.bufferedBytes).toBe(stream.length - 1);
    expect(d.push(stream.subarray(stream.length - 1))).toHaveLength(1);
  });

  it('refuses a header over the limit, naming it, and stays broken', () => {
    const head = Buffer.alloc(4);
    head.writeUInt32BE(maxHeaderBytes + 1);
    const d = new FrameDecoder();
    expect(() => d.push(head)).toThrow(/exceeds the 1048576-byte limit \(maxHeaderBytes\)/);
    expect(() => d.push(bytesOf(sample))).toThrow(WireFrameError);
  });

  it('refuses a payload over the limit, a non-object header and bad payloadBytes', () => {
    const frame = (json: string): Buffer => {
      const body = Buffer.from(json);
      const head = Buffer.alloc(4);
      head.writeUInt32BE(body.length);
      return Buffer.concat([head, body]);
    };
    expect(() => new FrameDecoder().push(frame(JSON.stringify({ type: 'kv', payloadBytes: maxFramePayloadBytes + 1 })))).toThrow(/maxFramePayloadBytes/);
    expect(() => new FrameDecoder().push(frame('[1,2]'))).toThrow(/not a JSON object/);
    expect(() => new FrameDecoder().push(frame('{nope'))).toThrow(/not valid JSON/);
    expect(() => new FrameDecoder().push(frame('{"payloadBytes":-1}'))).toThrow(/non-negative integer/);
  });

  it('encodes only consistent frames', () => {
    expect(() => encodeFrame({ type: 'part', id: 'x', payloadBytes: 4 }, new Uint8Array(3))).toThrow(/declares payloadBytes 4 but the payload has 3/);
    expect(() => encodeFrame({ type: 'hello', tokens: 'x'.repeat(maxHeaderBytes) })).toThrow(/maxHeaderBytes/);
  });
});

describe('kvMessages schemas', () => {
  it('parses each side and explains a bad message', () => {
    expect(parseMessage(clientMessageSchema, { type: 'prefill', id: 'j', tokenIds: [1, 2], numBlocks: 0 }, 'client').ok).toBe(true);
    expect(parseMessage(serverMessageSchema, { type: 'failed', id: 'j', message: 'oom' }, 'server').ok).toBe(true);
    const bad = parseMessage(clientMessageSchema, { type: 'welcome' }, 'client');
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.reason).toMatch(/not a valid client message \(type "welcome"\)/);
    const badTokens = parseMessage(clientMessageSchema, { type: 'prefill', id: 'j', tokenIds: [1.5], numBlocks: 0 }, 'client');
    if (!badTokens.ok) expect(badTokens.reason).toMatch(/tokenIds\.0/);
    else expect.fail('fractional token id accepted');
  });
});
