/**
 * The public face of the native package, imported as '@afd/native': the Engine and its AFD
 * links (AttentionLink, FfnServer), their options, info, states and counters, the probe and
 * the exit hooks. The raw addon view (addon.ts) is internal to native/. The StepPlan
 * builder and check live in '@afd/shared' (shared/src/engine), one of each for every caller.
 * Also exported: '@afd/native/checkpoint' (the checkpoint layer) and '@afd/native/ports'.
 */
export { Engine, type EngineLoadOptions } from './engine.js';
export { AttentionLink } from './AttentionLink.js';
export { FfnServer } from './FfnServer.js';
export { nativeExitHooks, probe, type NativeExitHooks } from './nativeProcess.js';
export type {
  AttentionLinkState,
  DeviceProbe,
  FfnServerState,
  KvShareDescriptor,
  LibraryProbe,
  NativeEngineInfo,
  NativeEngineOptions,
  NativeEngineStats,
  NativeExpertStats,
  ProbeResult,
} from './addon.js';
