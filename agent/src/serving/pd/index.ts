/**
 * Prefill/decode disaggregation, the transport: a decode rank (`KvTransferClient`) asks a
 * prefill rank (`KvTransferServer`, around the engine's `PrefillService`) to prefill prompts,
 * and receives the KV of their full blocks (and the recurrent state) over TCP.
 */
export { KvTransferServer, type KvTransferServerOptions, type KvTransferServerStats } from './KvTransferServer.js';
export { KvTransferClient, type KvTransferClientOptions } from './KvTransferClient.js';
export type { PrefillHandlers, PrefillTransferResult } from './ClientJob.js';
export type { PrefillJob, PrefillService, PrefillSink } from './PrefillService.js';
export { KvTransferProtocolError, PrefillFailedError, PrefillRankLostError, PrefillRankRefusedError } from './errors.js';
export { kvChunkBytes, kvWireLayoutSchema, maxChunkFrameBytes, pdWireVersion, type KvWireLayout } from './kvMessages.js';
export { FrameDecoder, WireFrameError, encodeFrame, maxFramePayloadBytes, maxHeaderBytes, type WireFrame } from './kvWire.js';
