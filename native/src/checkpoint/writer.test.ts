import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readSafetensorsHeader } from './safetensors.js';
import { tempDir } from '../testing/checkpointTesting.js';
import { planSafetensors, writeSafetensors } from './writer.js';

let dir: string;
beforeEach(async () => {
  dir = await tempDir();
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('safetensors writer', () => {
  it('pads the header so the data starts 8-byte aligned, for any header length', () => {
    for (let n = 1; n < 12; n++) {
      const { header, dataBytes } = planSafetensors([{ name: 'x'.repeat(n), dtype: 'f32', shape: [n] }]);
      expect(header.length % 8).toBe(0);
      expect(Number(header.readBigUInt64LE(0))).toBe(header.length - 8);
      expect(dataBytes).toBe(4 * n);
    }
  });

  it('streams chunked and async tensor bytes contiguously', async () => {
    const path = join(dir, 'c.safetensors');
    async function* gen() {
      yield new Uint8Array([5, 6]);
      yield new Uint8Array([7, 8]);
    }
    const size = await writeSafetensors(
      path,
      [
        { name: 'a', dtype: 'bf16', shape: [2] },
        { name: 'b', dtype: 'bf16', shape: [2] },
      ],
      (t) => (t.name === 'a' ? [new Uint8Array([1, 2]), new Uint8Array([3, 4])] : gen()),
    );
    const bytes = await readFile(path);
    expect(bytes.length).toBe(size);
    const h = await readSafetensorsHeader(path);
    expect([...bytes.subarray(h.dataOffset)]).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(h.tensors.get('b')!.offset).toBe(h.dataOffset + 4);
  });

  it('rejects fills of the wrong size and duplicate names', async () => {
    const path = join(dir, 'bad.safetensors');
    await expect(writeSafetensors(path, [{ name: 'a', dtype: 'f32', shape: [2] }], () => new Uint8Array(4))).rejects.toThrow(/tensor a \[2\] f32 needs 8 bytes, fill gave 4/);
    await expect(writeSafetensors(path, [{ name: 'a', dtype: 'f32', shape: [1] }], () => new Uint8Array(8))).rejects.toThrow(/fill gave more/);
    expect(() => planSafetensors([{ name: 'a', dtype: 'f32', shape: [1] }, { name: 'a', dtype: 'f32', shape: [1] }])).toThrow(/listed twice/);
  });
});
