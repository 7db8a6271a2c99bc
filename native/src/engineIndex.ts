/**
 * The engine's public TypeScript surface, imported as '@afd/native/engine': the Engine
 * wrapper, StepPlan validation and the plan builder.
 */
export { Engine, type EngineLoadOptions } from './engine.js';
export { expertStatsOf, toRankStats, type RankStatsExtras } from './rankStats.js';
export { validateStepPlan, buildStepPlan, StepPlanError, type PlanLimits, type PlanSeq } from './enginePlan.js';
export type { NativeEngineInfo, NativeEngineOptions, NativeEngineStats, NativeStepResult } from './index.js';
