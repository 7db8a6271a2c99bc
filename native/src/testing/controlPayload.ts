/**
 * The per-step control payload, attention -> FFN, sent once per step by the leader
 * (first attention rank) of each FFN rank's block (shared/src/topology/mapping.ts). The reference model
 * of native/src/comm/control-payload.cc: tests check the C++ against these bytes.
 *
 * Binary layout, little-endian, no padding (native/src/comm implements the same):
 *
 * | offset | size      | field      | meaning                                                   |
 * |--------|-----------|------------|-----------------------------------------------------------|
 * | 0      | 4         | magic      | u32 0x43444641, the bytes "AFDC"                          |
 * | 4      | 2         | version    | u16, CONTROL_PAYLOAD_VERSION (1)                          |
 * | 6      | 2         | flags      | u16 bits: 0 warmup, 1 capture, 2 replay, 3 shutdown; others 0 |
 * | 8      | 2         | numStages  | u16, 1..CONTROL_MAX_STAGES (2 with dual-batch overlap)     |
 * | 10     | 2         | numPeers   | u16, 1..CONTROL_MAX_PEERS (attention ranks of the block)   |
 * | 12     | 4         | totalBytes | u32, 24 + 4 * numStages * numPeers (whole payload)          |
 * | 16     | 8         | stepId     | u64, step counter of the sender (<= 2^53 - 1)               |
 * | 24     | 4*S*P     | counts     | u32 tokens, [stage][peer] row-major: stage 0 peers 0..P-1, then stage 1 |
 *
 * A peer with no tokens in a stage has count 0 (the FFN still receives its one-row
 * placeholder; see topology/aggregate.ts). capture and replay are mutually exclusive.
 * A reader may read the 24-byte header first and use totalBytes to frame the rest.
 */
import { z } from 'zod';

/** "AFDC" read as a little-endian u32. */
export const CONTROL_PAYLOAD_MAGIC = 0x43444641;
/** Layout version. */
export const CONTROL_PAYLOAD_VERSION = 1;
/** Header size in bytes. */
export const CONTROL_HEADER_BYTES = 24;
/** Most stages a step may have. */
export const CONTROL_MAX_STAGES = 8;
/** Most attention peers per FFN rank. */
export const CONTROL_MAX_PEERS = 1024;
/** Flag bits. */
export const CONTROL_FLAG_BITS = { warmup: 1, capture: 2, replay: 4, shutdown: 8 } as const;
const KNOWN_FLAGS = 0xf;

/** The payload's flags. */
export const controlFlagsSchema = z.object({
  /** Warmup step: run without recording stats; the FFN may capture graphs. */
  warmup: z.boolean(),
  /** The attention side captures a CUDA graph for these counts; the FFN captures too. */
  capture: z.boolean(),
  /** The attention side replays a captured graph; the FFN replays its graph for these counts. */
  replay: z.boolean(),
  /** Last payload: the FFN loop exits after reading it (no layer traffic follows). */
  shutdown: z.boolean(),
});
export type ControlFlags = z.infer<typeof controlFlagsSchema>;

/** A decoded control payload. */
export const controlPayloadSchema = z
  .object({
    /** Step counter of the sender, a non-negative safe integer. */
    stepId: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
    /** Step flags. */
    flags: controlFlagsSchema,
    /** [numStages][numPeers] tokens of each attention peer in each stage (u32). */
    counts: z
      .array(z.array(z.int().min(0).max(0xffffffff)).min(1).max(CONTROL_MAX_PEERS))
      .min(1)
      .max(CONTROL_MAX_STAGES),
  })
  .superRefine((p, ctx) => {
    const numPeers = p.counts[0]?.length ?? 0;
    p.counts.forEach((row, s) => {
      if (row.length !== numPeers) ctx.addIssue({ code: 'custom', path: ['counts', s], message: `stage ${s} has ${row.length} peers, stage 0 has ${numPeers}; every stage lists every peer` });
    });
    if (p.flags.capture && p.flags.replay) ctx.addIssue({ code: 'custom', path: ['flags'], message: 'capture and replay are mutually exclusive' });
  });
export type ControlPayload = z.infer<typeof controlPayloadSchema>;

/** Raised for a payload that cannot be encoded or decoded; the message says which field and why. */
export class ControlPayloadError extends Error {
  constructor(message: string) {
    super(`control payload: ${message}`);
    this.name = 'ControlPayloadError';
  }
}

/** Byte size of a payload with these dimensions. */
export function controlPayloadByteLength(numStages: number, numPeers: number): number {
  return CONTROL_HEADER_BYTES + 4 * numStages * numPeers;
}

/** Encodes a payload; throws ControlPayloadError for an invalid one. */
export function encodeControlPayload(payload: ControlPayload): Uint8Array {
  const parsed = controlPayloadSchema.safeParse(payload);
  if (!parsed.success) {
    throw new ControlPayloadError(parsed.error.issues.map((i) => `${i.path.join('.') || 'payload'}: ${i.message}`).join('; '));
  }
  const { stepId, flags, counts } = parsed.data;
  const numStages = counts.length;
  const numPeers = counts[0]!.length;
  const bytes = new Uint8Array(controlPayloadByteLength(numStages, numPeers));
  const view = new DataView(bytes.buffer);
  view.setUint32(0, CONTROL_PAYLOAD_MAGIC, true);
  view.setUint16(4, CONTROL_PAYLOAD_VERSION, true);
  let bits = 0;
  for (const [name, bit] of Object.entries(CONTROL_FLAG_BITS)) if (flags[name as keyof ControlFlags]) bits |= bit;
  view.setUint16(6, bits, true);
  view.setUint16(8, numStages, true);
  view.setUint16(10, numPeers, true);
  view.setUint32(12, bytes.length, true);
  view.setBigUint64(16, BigInt(stepId), true);
  let offset = CONTROL_HEADER_BYTES;
  for (const row of counts) {
    for (const c of row) {
      view.setUint32(offset, c, true);
      offset += 4;
    }
  }
  return bytes;
}

/** What the receiver expects; a mismatch is rejected. */
export interface ControlPayloadExpectation {
  /** Attention peers of the receiving FFN rank's block. */
  numPeers?: number;
}

function readHeader(bytes: Uint8Array): { view: DataView; bits: number; numStages: number; numPeers: number; totalBytes: number } {
  if (bytes.length < CONTROL_HEADER_BYTES) throw new ControlPayloadError(`${bytes.length} bytes is shorter than the ${CONTROL_HEADER_BYTES}-byte header`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const magic = view.getUint32(0, true);
  if (magic !== CONTROL_PAYLOAD_MAGIC) {
    throw new ControlPayloadError(`bad magic 0x${magic.toString(16).padStart(8, '0')} (expected 0x${CONTROL_PAYLOAD_MAGIC.toString(16)} "AFDC"); the stream is out of sync or the peer is not an AFD attention rank`);
  }
  const version = view.getUint16(4, true);
  if (version !== CONTROL_PAYLOAD_VERSION) {
    throw new ControlPayloadError(`version ${version} is not supported (this build speaks ${CONTROL_PAYLOAD_VERSION}); run the same AFD build on every rank`);
  }
  const bits = view.getUint16(6, true);
  if ((bits & ~KNOWN_FLAGS) !== 0) throw new ControlPayloadError(`unknown flag bits 0x${(bits & ~KNOWN_FLAGS).toString(16)} (known: 0x${KNOWN_FLAGS.toString(16)})`);
  const numStages = view.getUint16(8, true);
  if (numStages < 1 || numStages > CONTROL_MAX_STAGES) throw new ControlPayloadError(`numStages ${numStages} is outside 1..${CONTROL_MAX_STAGES}`);
  const numPeers = view.getUint16(10, true);
  if (numPeers < 1 || numPeers > CONTROL_MAX_PEERS) throw new ControlPayloadError(`numPeers ${numPeers} is outside 1..${CONTROL_MAX_PEERS}`);
  const totalBytes = view.getUint32(12, true);
  const expected = controlPayloadByteLength(numStages, numPeers);
  if (totalBytes !== expected) throw new ControlPayloadError(`totalBytes ${totalBytes} does not match ${numStages} stages x ${numPeers} peers (${expected} bytes)`);
  return { view, bits, numStages, numPeers, totalBytes };
}

/** Reads totalBytes from a (validated) header, for framing a stream. */
export function controlPayloadLengthFromHeader(header: Uint8Array): number {
  return readHeader(header).totalBytes;
}

/** Decodes a payload; throws ControlPayloadError naming the bad field. */
export function decodeControlPayload(bytes: Uint8Array, expect: ControlPayloadExpectation = {}): ControlPayload {
  const { view, bits, numStages, numPeers, totalBytes } = readHeader(bytes);
  if (bytes.length !== totalBytes) {
    throw new ControlPayloadError(`got ${bytes.length} bytes but the header says ${totalBytes} (${bytes.length < totalBytes ? 'truncated' : 'trailing bytes'})`);
  }
  if (expect.numPeers !== undefined && numPeers !== expect.numPeers) {
    throw new ControlPayloadError(`carries ${numPeers} peers but this FFN rank's block has ${expect.numPeers}; the ranks disagree on the topology`);
  }
  const stepId = view.getBigUint64(16, true);
  if (stepId > BigInt(Number.MAX_SAFE_INTEGER)) throw new ControlPayloadError(`stepId ${stepId} exceeds 2^53 - 1`);
  const flags: ControlFlags = {
    warmup: (bits & CONTROL_FLAG_BITS.warmup) !== 0,
    capture: (bits & CONTROL_FLAG_BITS.capture) !== 0,
    replay: (bits & CONTROL_FLAG_BITS.replay) !== 0,
    shutdown: (bits & CONTROL_FLAG_BITS.shutdown) !== 0,
  };
  if (flags.capture && flags.replay) throw new ControlPayloadError('capture and replay flags are both set (mutually exclusive)');
  const counts: number[][] = [];
  let offset = CONTROL_HEADER_BYTES;
  for (let s = 0; s < numStages; s++) {
    const row: number[] = [];
    for (let p = 0; p < numPeers; p++) {
      row.push(view.getUint32(offset, true));
      offset += 4;
    }
    counts.push(row);
  }
  return { stepId: Number(stepId), flags, counts };
}

/** Flags with everything off. */
export const NO_CONTROL_FLAGS: Readonly<ControlFlags> = Object.freeze({ warmup: false, capture: false, replay: false, shutdown: false });
