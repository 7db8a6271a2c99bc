/**
 * Safetensors header reader. Reads only the 8-byte length and the JSON header, validates
 * every entry against the file, and returns absolute byte ranges the engine can map.
 *
 * File layout: u64 little-endian header length N, N bytes of UTF-8 JSON
 * ({name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {..}}), then the
 * data buffer; offsets are relative to the start of the data buffer.
 */
import { open, type FileHandle } from 'node:fs/promises';
import type { TensorDtype } from '../modelSpec.js';
import { dtypeBytes, numElements, safetensorsDtypes } from './dtype.js';
import { CheckpointError, formatShape } from './errors.js';

/** Largest JSON header we read (the safetensors reference implementation uses 100 MB too). */
export const maxHeaderBytes = 100 * 1024 * 1024;

/** One tensor of a safetensors file, with its absolute byte range. */
export interface SafetensorsTensor {
  name: string;
  dtype: TensorDtype;
  shape: number[];
  /** Absolute offset in the file (8 + header length + data_offsets[0]). */
  offset: number;
  byteLength: number;
}

/** A validated safetensors header. */
export interface SafetensorsHeader {
  path: string;
  fileBytes: number;
  /** Bytes of the JSON header (without the 8-byte length). */
  headerBytes: number;
  /** Absolute offset of the data buffer. */
  dataOffset: number;
  /** The optional "__metadata__" string map. */
  metadata: Record<string, string>;
  /** Tensors in header order. */
  tensors: Map<string, SafetensorsTensor>;
}

const supportedList = Object.keys(safetensorsDtypes).join(', ');

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isIndex(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

async function readExactly(fh: FileHandle, path: string, length: number, position: number): Promise<Buffer> {
  const buf = Buffer.alloc(length);
  let done = 0;
  while (done < length) {
    const { bytesRead } = await fh.read(buf, done, length - done, position + done);
    if (bytesRead === 0) throw new CheckpointError(path, `file ended after ${position + done} bytes while reading the header`, { fix: 'the file is truncated; download it again' });
    done += bytesRead;
  }
  return buf;
}

function parseEntry(path: string, name: string, raw: unknown, dataOffset: number, dataBytes: number): SafetensorsTensor {
  const fail = (problem: string, fix?: string): never => {
    throw new CheckpointError(path, problem, { tensor: name, ...(fix ? { fix } : {}) });
  };
  if (name.length === 0) fail('empty tensor name in the header');
  if (!isRecord(raw)) return fail('header entry is not an object with dtype, shape and data_offsets');
  const { dtype: dtypeName, shape, data_offsets: offsets } = raw;
  if (typeof dtypeName !== 'string') return fail('dtype is missing or not a string');
  const dtype = safetensorsDtypes[dtypeName];
  if (!dtype) return fail(`dtype ${dtypeName} is not supported (supported: ${supportedList})`, 'convert the checkpoint to bf16, e.g. with transformers: model.to(torch.bfloat16).save_pretrained(dir)');
  if (!Array.isArray(shape) || !shape.every(isIndex)) return fail(`shape ${JSON.stringify(shape)} is not a list of non-negative integers`);
  if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every(isIndex)) return fail(`data_offsets ${JSON.stringify(offsets)} is not [begin, end] of non-negative integers`);
  const [begin, end] = offsets as [number, number];
  if (end < begin) fail(`data_offsets [${begin}, ${end}] end before they begin`);
  const expected = numElements(shape as number[]) * dtypeBytes[dtype];
  if (end - begin !== expected) {
    fail(`shape ${formatShape(shape as number[])} x ${dtypeName} needs ${expected} bytes but data_offsets [${begin}, ${end}] hold ${end - begin}`, 'the header is inconsistent; the file is corrupt');
  }
  if (end > dataBytes) {
    fail(`data_offsets [${begin}, ${end}] reach past the end of the data (${dataBytes} bytes after the header)`, 'the file is truncated or corrupt; download it again');
  }
  return { name, dtype, shape: [...(shape as number[])], offset: dataOffset + begin, byteLength: end - begin };
}

function checkNoOverlap(path: string, tensors: SafetensorsTensor[]): void {
  const sorted = tensors.filter((t) => t.byteLength > 0).sort((a, b) => a.offset - b.offset);
  for (let i = 1; i < sorted.length; i++) {
    const prev = sorted[i - 1]!;
    const cur = sorted[i]!;
    if (cur.offset < prev.offset + prev.byteLength) {
      throw new CheckpointError(path, `byte ranges of tensors ${prev.name} and ${cur.name} overlap`, { tensor: cur.name, fix: 'the header is corrupt; download the file again' });
    }
  }
}

/** Parse an already-read header JSON text (exported for tests of the validation rules). */
export function parseHeaderJson(path: string, text: string, dataOffset: number, fileBytes: number): Omit<SafetensorsHeader, 'path' | 'fileBytes' | 'headerBytes' | 'dataOffset'> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new CheckpointError(path, `header is not valid JSON: ${(err as Error).message}`, { fix: 'the file is corrupt or not a safetensors file' });
  }
  if (!isRecord(json)) throw new CheckpointError(path, 'header JSON is not an object', { fix: 'the file is corrupt or not a safetensors file' });
  let metadata: Record<string, string> = {};
  const tensors = new Map<string, SafetensorsTensor>();
  for (const [name, raw] of Object.entries(json)) {
    if (name === '__metadata__') {
      if (!isRecord(raw) || !Object.values(raw).every((v) => typeof v === 'string')) {
        throw new CheckpointError(path, '__metadata__ must be an object of string values');
      }
      metadata = raw as Record<string, string>;
      continue;
    }
    tensors.set(name, parseEntry(path, name, raw, dataOffset, fileBytes - dataOffset));
  }
  checkNoOverlap(path, [...tensors.values()]);
  return { metadata, tensors };
}

/** Read and validate the header of one safetensors file. Throws CheckpointError on any problem. */
export async function readSafetensorsHeader(path: string): Promise<SafetensorsHeader> {
  let fh: FileHandle;
  try {
    fh = await open(path, 'r');
  } catch (err) {
    throw new CheckpointError(path, `cannot open: ${(err as Error).message}`, { fix: 'check the path and file permissions' });
  }
  try {
    const { size: fileBytes } = await fh.stat();
    if (fileBytes < 8) throw new CheckpointError(path, `file has ${fileBytes} bytes, fewer than the 8-byte header length`, { fix: 'the file is truncated or not a safetensors file' });
    const lengthBuf = await readExactly(fh, path, 8, 0);
    const headerLength = lengthBuf.readBigUInt64LE(0);
    if (headerLength > BigInt(maxHeaderBytes)) {
      throw new CheckpointError(path, `header length ${headerLength} exceeds the ${maxHeaderBytes}-byte cap`, { fix: 'the file is corrupt or not a safetensors file' });
    }
    const headerBytes = Number(headerLength);
    if (headerBytes < 2) throw new CheckpointError(path, `header length ${headerBytes} is too small for a JSON object`, { fix: 'the file is corrupt' });
    if (8 + headerBytes > fileBytes) {
      throw new CheckpointError(path, `header length ${headerBytes} runs past the end of the ${fileBytes}-byte file`, { fix: 'the file is truncated or corrupt; download it again' });
    }
    const text = (await readExactly(fh, path, headerBytes, 8)).toString('utf8');
    const dataOffset = 8 + headerBytes;
    const { metadata, tensors } = parseHeaderJson(path, text, dataOffset, fileBytes);
    return { path, fileBytes, headerBytes, dataOffset, metadata, tensors };
  } finally {
    await fh.close();
  }
}
