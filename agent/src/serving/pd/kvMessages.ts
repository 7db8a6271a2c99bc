/**
 * The messages of the prefill/decode KV transfer protocol (version `pdWireVersion`), as zod
 * schemas discriminated on `type`, one per frame header (kvWire.ts frames them).
 *
 * Client (decode rank) → server (prefill rank): `hello`, then `prefill` and `cancel`.
 * Server → client: `welcome` or `refused` (then the server closes), and per job: `kv` and
 * `state` chunks, then `done` or `failed`. Several jobs may be in flight on one connection
 * with their frames interleaved.
 *
 * A chunk's bytes may be larger than one frame should carry (one job must not hold the
 * socket for long): a `kv` or `state` frame declares the chunk's `totalBytes` and carries its
 * first `payloadBytes`; the rest follows in `part` frames of the same job, in order, before any
 * other frame of that job. Every frame's payload is at most `maxChunkFrameBytes`.
 *
 * Peer memory (ranks on one host, optional fields of the same version): a `hello` offering
 * `peer` (the memory kind this decode rank can map, and its host) gets a `welcome` with the
 * prefill engine's `peer` descriptor when both match. A `prefill` with `peer: true` then gets
 * `kvref` chunks (block ids in the prefill rank's cache, no payload) and a `stateref`
 * instead of `kv`/`state`: the decode rank copies the blocks itself, and sends `release`
 * once it has (or gave up), so the prefill rank frees the blocks it held for it.
 */
import { z } from 'zod';

export const pdWireVersion = 1;

/** The most payload bytes a sender puts in one frame, so other jobs' frames get their turn. */
export const maxChunkFrameBytes = 4 * 1024 * 1024;

const count = z.number().int().nonnegative();
const positive = z.number().int().positive();
const jobId = z.string().min(1).max(256);

/** What the prefill rank's KV looks like: the decode rank checks it against its own cache. */
export const kvWireLayoutSchema = z.object({
  dtype: z.enum(['f32', 'bf16', 'f16']),
  /** Tokens per KV block. */
  blockSize: positive,
  /** Attention layers that keep KV (a hybrid model's recurrent layers keep none). */
  numKvLayers: count,
  /** 2 when K and V are separate tensors, 1 when the layer stores one (e.g. MLA latents). */
  tensorsPerLayer: z.union([z.literal(1), z.literal(2)]),
  /** Bytes of one token's row in one tensor of one layer. */
  rowBytes: positive,
  /** Bytes of one sequence's recurrent state; 0 = the model keeps none. */
  stateBytes: count,
});
export type KvWireLayout = z.infer<typeof kvWireLayoutSchema>;

/** The size a `kv` chunk of `numBlocks` blocks must have in `layout`. */
export function kvChunkBytes(layout: KvWireLayout, numBlocks: number): number {
  return layout.numKvLayers * layout.tensorsPerLayer * numBlocks * layout.blockSize * layout.rowBytes;
}

/** The most blocks one `kvref` names. */
export const maxRefBlocks = 256;

const memoryKind = z.enum(['cuda', 'cpu']);
const handle = z.string().max(64 * 1024);

/** The prefill engine's shareable KV (KvPeerDescriptor): what a decode rank on its host maps. */
export const kvPeerDescriptorSchema = z.object({
  kind: memoryKind,
  host: z.string().min(1).max(1024),
  kv: handle,
  kvBytes: count,
  state: handle.optional(),
  stateBytes: count,
  numKvBlocks: count,
  numStateSlots: count,
});

export const helloSchema = z.object({
  type: z.literal('hello'),
  version: z.number().int(),
  launchId: z.string(),
  /** The decode rank can map peer memory of this kind on this host, and wants to. */
  peer: z.object({ kind: memoryKind, host: z.string().min(1).max(1024) }).optional(),
});
export const prefillSchema = z.object({
  type: z.literal('prefill'),
  id: jobId,
  tokenIds: z.array(count),
  numBlocks: count,
  cacheSalt: z.string().optional(),
  /** Answer with kvref/stateref (peer memory agreed in the handshake), not bytes. */
  peer: z.literal(true).optional(),
});
export const cancelSchema = z.object({ type: z.literal('cancel'), id: jobId });
/** A peer job's blocks are copied (or given up): the prefill rank may free them. */
export const releaseSchema = z.object({ type: z.literal('release'), id: jobId });

export const welcomeSchema = z.object({
  type: z.literal('welcome'),
  version: z.number().int(),
  rank: count,
  layout: kvWireLayoutSchema,
  /** Sent when the hello offered peer memory of this engine's kind on its host, and the engine shares its KV. */
  peer: kvPeerDescriptorSchema.optional(),
});
export const refusedSchema = z.object({ type: z.literal('refused'), reason: z.string() });
export const kvSchema = z.object({
  type: z.literal('kv'),
  id: jobId,
  blockOffset: count,
  numBlocks: positive,
  totalBytes: count,
  payloadBytes: count,
});
export const stateSchema = z.object({ type: z.literal('state'), id: jobId, totalBytes: count, payloadBytes: count });
/** Blocks [blockOffset, blockOffset + numBlocks) of a peer job are the prefill rank's blocks blockIds (in order). */
export const kvRefSchema = z.object({
  type: z.literal('kvref'),
  id: jobId,
  blockOffset: count,
  numBlocks: positive.max(maxRefBlocks),
  blockIds: z.array(count).min(1).max(maxRefBlocks),
});
/** A peer job's recurrent state is in the prefill rank's state slot `slot`. */
export const stateRefSchema = z.object({ type: z.literal('stateref'), id: jobId, slot: count });
export const partSchema = z.object({ type: z.literal('part'), id: jobId, payloadBytes: positive });
export const doneSchema = z.object({ type: z.literal('done'), id: jobId, prefillMs: z.number().nonnegative(), cachedTokens: count });
export const failedSchema = z.object({ type: z.literal('failed'), id: jobId, message: z.string() });

export const clientMessageSchema = z.discriminatedUnion('type', [helloSchema, prefillSchema, cancelSchema, releaseSchema]);
export const serverMessageSchema = z.discriminatedUnion('type', [
  welcomeSchema,
  refusedSchema,
  kvSchema,
  stateSchema,
  kvRefSchema,
  stateRefSchema,
  partSchema,
  doneSchema,
  failedSchema,
]);

export type HelloMessage = z.infer<typeof helloSchema>;
export type PrefillMessage = z.infer<typeof prefillSchema>;
export type CancelMessage = z.infer<typeof cancelSchema>;
export type ReleaseMessage = z.infer<typeof releaseSchema>;
export type KvRefMessage = z.infer<typeof kvRefSchema>;
export type StateRefMessage = z.infer<typeof stateRefSchema>;
export type KvPeerWireDescriptor = z.infer<typeof kvPeerDescriptorSchema>;
export type WelcomeMessage = z.infer<typeof welcomeSchema>;
export type RefusedMessage = z.infer<typeof refusedSchema>;
export type KvMessage = z.infer<typeof kvSchema>;
export type StateMessage = z.infer<typeof stateSchema>;
export type PartMessage = z.infer<typeof partSchema>;
export type DoneMessage = z.infer<typeof doneSchema>;
export type FailedMessage = z.infer<typeof failedSchema>;
/** Client → server. */
export type ClientMessage = z.infer<typeof clientMessageSchema>;
/** Server → client. */
export type ServerMessage = z.infer<typeof serverMessageSchema>;

/** Parses a frame header as `schema`, or explains in one line why it is not one. */
export function parseMessage<T>(schema: z.ZodType<T>, header: unknown, side: string): { ok: true; message: T } | { ok: false; reason: string } {
  const parsed = schema.safeParse(header);
  if (parsed.success) return { ok: true, message: parsed.data };
  const type = typeof header === 'object' && header !== null ? (header as { type?: unknown }).type : undefined;
  const issue = parsed.error.issues[0];
  const where = issue && issue.path.length > 0 ? ` at ${issue.path.join('.')}` : '';
  return { ok: false, reason: `not a valid ${side} message (type ${JSON.stringify(type) ?? 'missing'}): ${issue?.message ?? 'invalid'}${where}` };
}
