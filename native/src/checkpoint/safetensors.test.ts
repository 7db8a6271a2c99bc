import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CheckpointError } from './errors.js';
import { Xoshiro128 } from './random.js';
import { maxHeaderBytes, readSafetensorsHeader } from './safetensors.js';
import { tempDir, writeRawSafetensors } from '../testing/checkpointTesting.js';
import { writeSafetensors } from './writer.js';

let dir: string;
beforeEach(async () => {
  dir = await tempDir();
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const entry = (dtype: string, shape: number[], begin: number, end: number) => ({ dtype, shape, data_offsets: [begin, end] });

async function expectReject(header: unknown, dataBytes: number, pattern: RegExp, opts: { headerLength?: bigint } = {}): Promise<CheckpointError> {
  const path = join(dir, 'bad.safetensors');
  await writeRawSafetensors(path, header, dataBytes, opts);
  const err = await readSafetensorsHeader(path).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(CheckpointError);
  expect((err as Error).message).toMatch(pattern);
  expect((err as Error).message).toContain(path);
  return err as CheckpointError;
}

describe('readSafetensorsHeader', () => {
  it('reads a file the writer produced: dtypes, shapes, absolute offsets, metadata, data', async () => {
    const path = join(dir, 'ok.safetensors');
    const a = new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    const b = new Uint8Array(new Float32Array([1.5, -2]).buffer);
    await writeSafetensors(
      path,
      [
        { name: 'a', dtype: 'bf16', shape: [2, 3] },
        { name: 'b', dtype: 'f32', shape: [2] },
        { name: 'empty', dtype: 'f16', shape: [0, 4] },
      ],
      (t) => (t.name === 'a' ? a : t.name === 'b' ? b : new Uint8Array(0)),
      { format: 'pt' },
    );
    const h = await readSafetensorsHeader(path);
    expect(h.dataOffset % 8).toBe(0);
    expect(h.metadata).toEqual({ format: 'pt' });
    expect([...h.tensors.keys()]).toEqual(['a', 'b', 'empty']);
    const ta = h.tensors.get('a')!;
    expect(ta).toMatchObject({ dtype: 'bf16', shape: [2, 3], offset: h.dataOffset, byteLength: 12 });
    expect(h.tensors.get('b')).toMatchObject({ dtype: 'f32', shape: [2], offset: h.dataOffset + 12, byteLength: 8 });
    expect(h.tensors.get('empty')).toMatchObject({ dtype: 'f16', byteLength: 0 });
    const bytes = await readFile(path);
    expect([...bytes.subarray(ta.offset, ta.offset + 12)]).toEqual([...a]);
    expect(h.fileBytes).toBe(bytes.length);
  });

  it('rejects a file shorter than the 8-byte length', async () => {
    const path = join(dir, 'short.safetensors');
    await writeFile(path, Buffer.from([1, 2, 3]));
    await expect(readSafetensorsHeader(path)).rejects.toThrow(/fewer than the 8-byte header length/);
  });

  it('rejects a header length above the cap', async () => {
    await expectReject({}, 0, /exceeds the .*cap/, { headerLength: BigInt(maxHeaderBytes) + 1n });
  });

  it('rejects a header length that runs past the end of the file', async () => {
    await expectReject({}, 0, /runs past the end/, { headerLength: 1000n });
  });

  it('rejects malformed JSON', async () => {
    await expectReject('{"a": {"dtype": "BF16",', 0, /not valid JSON/);
  });

  it('rejects a JSON header that is not an object', async () => {
    await expectReject('[1,2,3]', 0, /not an object/);
  });

  it('accepts __metadata__ but rejects non-string metadata values', async () => {
    const path = join(dir, 'meta.safetensors');
    await writeRawSafetensors(path, { __metadata__: { format: 'pt' }, x: entry('F32', [1], 0, 4) }, 4);
    expect((await readSafetensorsHeader(path)).metadata).toEqual({ format: 'pt' });
    await expectReject({ __metadata__: { n: 1 } }, 0, /__metadata__ must be an object of string values/);
  });

  it('rejects unknown dtypes and lists the supported ones', async () => {
    const err = await expectReject({ w: entry('F64', [2], 0, 16) }, 16, /dtype F64 is not supported \(supported: BF16, F16, F32\)/);
    expect(err.tensor).toBe('w');
    await expectReject({ w: entry('I8', [2], 0, 2) }, 2, /dtype I8 is not supported/);
  });

  it('rejects a shape x dtype size that differs from the byte range', async () => {
    await expectReject({ w: entry('BF16', [2, 3], 0, 10) }, 16, /needs 12 bytes but data_offsets \[0, 10\] hold 10/);
  });

  it('rejects malformed shapes and offsets', async () => {
    await expectReject({ w: { dtype: 'F32', shape: [-1], data_offsets: [0, 4] } }, 4, /shape \[-1\] is not a list/);
    await expectReject({ w: { dtype: 'F32', shape: [1], data_offsets: [0] } }, 4, /data_offsets \[0\] is not \[begin, end\]/);
    await expectReject({ w: { dtype: 'F32', shape: [1], data_offsets: [4, 0] } }, 4, /end before they begin/);
    await expectReject({ w: 'nope' }, 0, /not an object with dtype/);
  });

  it('rejects ranges outside the file', async () => {
    await expectReject({ w: entry('F32', [4], 0, 16) }, 8, /reach past the end of the data \(8 bytes/);
  });

  it('rejects overlapping ranges', async () => {
    await expectReject({ a: entry('F32', [2], 0, 8), b: entry('F32', [2], 4, 12) }, 12, /tensors a and b overlap/);
  });

  it('never fails with anything but a CheckpointError on corrupted bytes (fuzz)', async () => {
    const path = join(dir, 'fuzz.safetensors');
    await writeSafetensors(
      path,
      [
        { name: 'a', dtype: 'bf16', shape: [3, 5] },
        { name: 'b', dtype: 'f32', shape: [7] },
      ],
      (t) => new Uint8Array(t.name === 'a' ? 30 : 28),
    );
    const good = await readFile(path);
    const rng = new Xoshiro128(42);
    for (let i = 0; i < 300; i++) {
      const bad = Buffer.from(good);
      const flips = 1 + (rng.nextU32() % 4);
      // Corrupt the length prefix and header mostly; sometimes truncate.
      for (let f = 0; f < flips; f++) bad[rng.nextU32() % Math.min(bad.length, 120)] = rng.nextU32() & 0xff;
      const cut = rng.nextU32() % 5 === 0 ? rng.nextU32() % bad.length : bad.length;
      await writeFile(path, bad.subarray(0, cut));
      await readSafetensorsHeader(path).catch((err: unknown) => {
        expect(err).toBeInstanceOf(CheckpointError);
      });
    }
  });

  it('names the path when the file cannot be opened', async () => {
    await expect(readSafetensorsHeader(join(dir, 'missing.safetensors'))).rejects.toThrow(/missing\.safetensors: cannot open/);
  });
});
