/**
 * The engine's public TypeScript surface, imported as '@afd/native/engine': the Engine
 * wrapper and its counters. The StepPlan builder and check live in '@afd/shared'
 * (shared/src/engine), one of each for every caller.
 */
export { Engine, type EngineLoadOptions } from './engine.js';
export { expertStatsOf, toRankStats, type RankStatsExtras } from './rankStats.js';
export type { NativeEngineInfo, NativeEngineOptions, NativeEngineStats, NativeStepResult } from './index.js';
