/**
 * Safetensors writer: plans the header from the tensor list, writes it first (padded with
 * spaces so the data buffer starts 8-byte aligned), then streams each tensor's bytes in
 * order. Tensors are contiguous (no holes), as the safetensors format requires.
 */
import { open } from 'node:fs/promises';
import type { TensorDtype } from '../modelSpec.js';
import { dtypeBytes, numElements, safetensorsDtypeNames } from './dtype.js';

/** A tensor to write: name, dtype and shape. */
export interface TensorPlan {
  name: string;
  dtype: TensorDtype;
  shape: number[];
}

/** Bytes of one tensor, given whole or as chunks (for tensors too big to hold at once). */
export type TensorBytes = Uint8Array | Iterable<Uint8Array> | AsyncIterable<Uint8Array>;

/** Produces the bytes of tensor `index` of the plan. */
export type TensorFill = (tensor: TensorPlan, index: number) => TensorBytes | Promise<TensorBytes>;

/** Byte size of one planned tensor. */
export function tensorByteLength(t: TensorPlan): number {
  return numElements(t.shape) * dtypeBytes[t.dtype];
}

/** The header bytes (length prefix included) and the data size for a list of tensors. */
export function planSafetensors(tensors: readonly TensorPlan[], metadata: Record<string, string> = {}): { header: Buffer; dataBytes: number } {
  const json: Record<string, unknown> = {};
  if (Object.keys(metadata).length > 0) json['__metadata__'] = metadata;
  let offset = 0;
  const seen = new Set<string>();
  for (const t of tensors) {
    if (seen.has(t.name)) throw new Error(`safetensors writer: tensor ${t.name} is listed twice`);
    seen.add(t.name);
    const bytes = tensorByteLength(t);
    json[t.name] = { dtype: safetensorsDtypeNames[t.dtype], shape: t.shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  let text = JSON.stringify(json);
  const pad = (8 - ((8 + Buffer.byteLength(text)) % 8)) % 8;
  text += ' '.repeat(pad);
  const body = Buffer.from(text, 'utf8');
  const header = Buffer.alloc(8 + body.length);
  header.writeBigUInt64LE(BigInt(body.length), 0);
  body.copy(header, 8);
  return { header, dataBytes: offset };
}

function isUint8Array(b: TensorBytes): b is Uint8Array {
  return b instanceof Uint8Array;
}

async function* chunksOf(bytes: TensorBytes): AsyncIterable<Uint8Array> {
  if (isUint8Array(bytes)) yield bytes;
  else yield* bytes;
}

/**
 * Write a safetensors file. `fill` is called once per tensor, in order; the bytes it
 * returns must match the tensor's dtype and shape exactly. Returns the file size.
 */
export async function writeSafetensors(path: string, tensors: readonly TensorPlan[], fill: TensorFill, metadata: Record<string, string> = {}): Promise<number> {
  const { header, dataBytes } = planSafetensors(tensors, metadata);
  const fh = await open(path, 'w');
  try {
    let position = 0;
    await fh.write(header, 0, header.length, position);
    position += header.length;
    for (const [index, t] of tensors.entries()) {
      const want = tensorByteLength(t);
      let got = 0;
      for await (const chunk of chunksOf(await fill(t, index))) {
        got += chunk.byteLength;
        if (got > want) break;
        await fh.write(chunk, 0, chunk.byteLength, position);
        position += chunk.byteLength;
      }
      if (got !== want) {
        throw new Error(`safetensors writer: tensor ${t.name} ${JSON.stringify(t.shape)} ${t.dtype} needs ${want} bytes, fill gave ${got > want ? 'more' : got}`);
      }
    }
    return header.length + dataBytes;
  } finally {
    await fh.close();
  }
}
