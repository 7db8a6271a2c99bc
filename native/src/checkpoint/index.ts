/**
 * Checkpoint layer: HuggingFace config.json and safetensors -> validated ModelLoadSpec
 * per role, plus the safetensors writer and deterministic init used by make-model and
 * tests. Imported as '@afd/native/checkpoint'. Test helpers (test models, the golden
 * fixtures) live in native/src/testing/.
 */
export { CheckpointError } from './errors.js';
export { dtypeBytes, numElements } from './dtype.js';
export { readSafetensorsHeader, maxHeaderBytes, type SafetensorsHeader, type SafetensorsTensor } from './safetensors.js';
export { openCheckpoint, indexFileName, singleFileName, type CheckpointTensors } from './shards.js';
export { parseModelConfig, supportedArchitectures } from './config.js';
export { familyRowOf, findFamilyRow, slotName, type FamilyRow, type SlotNames } from './families.js';
export { parseRope, supportedRopeTypes } from './rope.js';
export { bindingOf, modelTensors, roleTensors, roleOwns, type ExpectedTensor, type TensorOwner } from './tensorTables.js';
export { buildLoadSpec, ffnLoadByRank, readModelConfig, residentBytesByRole, roleLoadSpec, hasSafetensors, type FfnRankLoad, type LoadSpecOptions, type RoleLoadSpec, type RoleSpecOptions } from './loadSpec.js';
export { storedTensorPlans, fusedExpertRef, type FusedExpertNames, type StoredTensorPlan } from './fusedExperts.js';
export { dummyLoadSpec, dummyInit, DUMMY_NORM_SPREAD, type DummySpecOptions } from './dummy.js';
export { writeSafetensors, planSafetensors, tensorByteLength, type TensorPlan, type TensorBytes, type TensorFill } from './writer.js';
export { Xoshiro128, normalBf16, toBf16Bits, fromBf16Bits, hashName, type NormalInit } from './random.js';
export { assertEngineBuilds, engineGaps, engineRefusal, slotsNotYetOnEngine } from '../engineKinds.js';
export type { ArchFamily, AttentionKind, FfnKind, LayerKinds, ModelRole, ModelLoadSpec, ModelConfigSpec, SlotBinding, StoredTensor, TensorRef, TensorSlot, TensorDtype, RopeScalingSpec, GdnSpec } from '../modelSpec.js';
