import { describe, expect, it } from 'vitest';
import {
  CONTROL_HEADER_BYTES,
  CONTROL_MAX_PEERS,
  ControlPayloadError,
  controlPayloadByteLength,
  controlPayloadLengthFromHeader,
  decodeControlPayload,
  encodeControlPayload,
  NO_CONTROL_FLAGS,
  type ControlPayload,
} from './controlPayload.js';

const sample: ControlPayload = { stepId: 42, flags: { ...NO_CONTROL_FLAGS, replay: true }, counts: [[3, 0], [1, 2]] };

describe('control payload layout', () => {
  it('encodes the documented little-endian bytes', () => {
    const bytes = encodeControlPayload(sample);
    expect(bytes.length).toBe(24 + 4 * 2 * 2);
    expect(Array.from(bytes)).toEqual([
      0x41, 0x46, 0x44, 0x43, // magic "AFDC"
      1, 0, // version 1
      4, 0, // flags: replay (bit 2)
      2, 0, // numStages
      2, 0, // numPeers
      40, 0, 0, 0, // totalBytes
      42, 0, 0, 0, 0, 0, 0, 0, // stepId
      3, 0, 0, 0, 0, 0, 0, 0, // stage 0: peer 0 = 3, peer 1 = 0
      1, 0, 0, 0, 2, 0, 0, 0, // stage 1: peer 0 = 1, peer 1 = 2
    ]);
    expect(controlPayloadLengthFromHeader(bytes.subarray(0, CONTROL_HEADER_BYTES))).toBe(40);
  });

  it('round-trips every flag combination, sizes and large values', () => {
    for (let bits = 0; bits < 16; bits++) {
      const flags = { warmup: !!(bits & 1), capture: !!(bits & 2), replay: !!(bits & 4), shutdown: !!(bits & 8) };
      if (flags.capture && flags.replay) continue;
      for (const [stages, peers] of [[1, 1], [2, 3], [1, 16], [8, CONTROL_MAX_PEERS]] as const) {
        const counts = Array.from({ length: stages }, (_, s) => Array.from({ length: peers }, (_, p) => (s * 131 + p * 7919) % 100_000));
        counts[0]![0] = 0xffffffff;
        const payload = { stepId: Number.MAX_SAFE_INTEGER - bits, flags, counts };
        const bytes = encodeControlPayload(payload);
        expect(bytes.length).toBe(controlPayloadByteLength(stages, peers));
        expect(decodeControlPayload(bytes, { numPeers: peers })).toEqual(payload);
      }
    }
  });

  it('decodes from a view into a larger buffer', () => {
    const bytes = encodeControlPayload(sample);
    const big = new Uint8Array(bytes.length + 10);
    big.set(bytes, 5);
    expect(decodeControlPayload(big.subarray(5, 5 + bytes.length))).toEqual(sample);
  });
});

describe('control payload rejects corrupt input', () => {
  const good = () => encodeControlPayload(sample);
  const patched = (offset: number, bytes: number[]) => {
    const b = good();
    b.set(bytes, offset);
    return b;
  };
  const cases: [string, Uint8Array, RegExp][] = [
    ['short header', good().subarray(0, 10), /shorter than the 24-byte header/],
    ['bad magic', patched(0, [0, 0, 0, 0]), /bad magic 0x00000000/],
    ['future version', patched(4, [2, 0]), /version 2 is not supported/],
    ['unknown flags', patched(6, [0x10, 0]), /unknown flag bits 0x10/],
    ['capture+replay', patched(6, [6, 0]), /mutually exclusive/],
    ['zero stages', patched(8, [0, 0]), /numStages 0/],
    ['too many stages', patched(8, [9, 0]), /numStages 9/],
    ['zero peers', patched(10, [0, 0]), /numPeers 0/],
    ['totalBytes mismatch', patched(12, [44, 0, 0, 0]), /totalBytes 44 does not match/],
    ['truncated', good().subarray(0, 36), /got 36 bytes but the header says 40 \(truncated\)/],
    ['trailing', Uint8Array.from([...good(), 0]), /trailing bytes/],
    ['stepId overflow', patched(16, [0, 0, 0, 0, 0, 0, 0x20, 0]), /exceeds 2\^53/],
  ];
  it.each(cases)('%s', (_name, bytes, why) => {
    expect(() => decodeControlPayload(bytes)).toThrow(ControlPayloadError);
    expect(() => decodeControlPayload(bytes)).toThrow(why);
  });

  it('rejects a peer count the receiver does not expect', () => {
    expect(() => decodeControlPayload(good(), { numPeers: 3 })).toThrow(/carries 2 peers but this FFN rank's block has 3/);
  });

  it('refuses to encode invalid payloads', () => {
    const bad: [ControlPayload, RegExp][] = [
      [{ ...sample, counts: [] }, /counts/],
      [{ ...sample, counts: [[1, 2], [3]] }, /stage 1 has 1 peers/],
      [{ ...sample, counts: [[-1]] }, /counts/],
      [{ ...sample, counts: [[2 ** 32]] }, /counts/],
      [{ ...sample, stepId: -1 }, /stepId/],
      [{ ...sample, flags: { ...NO_CONTROL_FLAGS, capture: true, replay: true } }, /mutually exclusive/],
      [{ ...sample, counts: Array.from({ length: 9 }, () => [1]) }, /counts/],
    ];
    for (const [payload, why] of bad) expect(() => encodeControlPayload(payload)).toThrow(why);
  });
});
