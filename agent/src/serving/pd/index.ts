/**
 * Prefill/decode disaggregation, the transport: a decode rank (`KvTransferClient`) asks a
 * prefill rank (`KvTransferServer`, around the engine's `PrefillService`) to prefill prompts,
 * and receives the KV of their full blocks (and the recurrent state) over TCP, or, for ranks
 * on one host, copies them from the prefill rank's memory with only block ids on the wire.
 */
export { KvTransferServer, type KvTransferServerOptions, type KvTransferServerStats } from './KvTransferServer.js';
export { KvTransferClient, type KvTransferClientOptions } from './KvTransferClient.js';
export type { PrefillHandlers, PrefillTransferResult } from './ClientJob.js';
export type { PrefillJob, PrefillResult, PrefillService, PrefillSink } from './PrefillService.js';
export { KvTransferProtocolError, PrefillFailedError, PrefillRankLostError, PrefillRankRefusedError } from './errors.js';
export { kvChunkBytes, kvPeerDescriptorSchema, kvWireLayoutSchema, maxChunkFrameBytes, maxRefBlocks, pdWireVersion, type KvWireLayout } from './kvMessages.js';
export { PEER_HOLD_MS } from './ServerConnection.js';
export { FrameDecoder, WireFrameError, encodeFrame, maxFramePayloadBytes, maxHeaderBytes, type WireFrame } from './kvWire.js';
