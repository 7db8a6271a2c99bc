import { inflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { consoleIcon, crc32, encodePng } from './icon.js';

describe('icon', () => {
  it('computes the PNG CRC-32', () => {
    expect(crc32(Buffer.from('IEND'))).toBe(0xae426082);
  });

  it('encodes a valid RGBA PNG of the requested size', () => {
    const png = consoleIcon(64);
    expect([...png.subarray(0, 8)]).toEqual([137, 80, 78, 71, 13, 10, 26, 10]);
    expect(png.subarray(12, 16).toString('ascii')).toBe('IHDR');
    expect(png.readUInt32BE(16)).toBe(64);
    expect(png.readUInt32BE(20)).toBe(64);
    expect(png[25]).toBe(6); // RGBA
    const idatLen = png.readUInt32BE(33);
    const raw = inflateSync(png.subarray(41, 41 + idatLen));
    expect(raw).toHaveLength((64 * 4 + 1) * 64);
    // Corner transparent, centre of the attention block blue.
    expect(raw[1 + 3]).toBe(0);
    const at = (x: number, y: number) => [...raw.subarray(y * 257 + 1 + x * 4, y * 257 + 1 + x * 4 + 4)];
    expect(at(16, 32)).toEqual([94, 177, 255, 255]);
    expect(at(47, 32)).toEqual([255, 209, 102, 255]);
    expect(png.subarray(png.length - 8, png.length - 4).toString('ascii')).toBe('IEND');
  });

  it('rejects a pixel buffer of the wrong size', () => {
    expect(() => encodePng(2, 2, new Uint8Array(3))).toThrow(/3 bytes for 2 x 2/);
  });
});
