import { describe, expect, it } from 'vitest';
import { parseModelConfig } from '../checkpoint/config.js';
import { tinyConfigs } from '../engineTesting.js';
import { loadAddon } from '../index.js';
import type { ModelLoadSpec } from '../modelSpec.js';

// The CUDA entry points read their options before touching a device, so a wrongly typed
// option is refused with a named error on any machine where the CUDA variant is built.
const addon = loadAddon();
const cuda = addon.probe().variant === 'cuda';
const spec: ModelLoadSpec = {
  config: parseModelConfig('tiny/config.json', tinyConfigs.qwen3_moe),
  role: 'colocated',
  computeGateOnAttention: false,
  files: [],
  tensors: [],
};
const bad = (options: Record<string, unknown>): never => options as never;

describe.skipIf(!cuda)('CUDA binding options', () => {
  it('names the entry point, the option and the expected type', () => {
    expect(() => addon.cudaExpertGemmBench(bad({ batches: '1,8' }))).toThrow('cudaExpertGemmBench: option batches must be an array of numbers');
    expect(() => addon.cudaExpertGemmBench(bad({ batches: [1, 'x'] }))).toThrow('cudaExpertGemmBench: option batches must be an array of numbers');
    expect(() => addon.cudaExpertGemmBench(bad({ routing: 3 }))).toThrow('cudaExpertGemmBench: option routing must be a string');
    expect(() => addon.cudaExpertGemmBench(bad({ perExpert: 'yes' }))).toThrow('cudaExpertGemmBench: option perExpert must be a boolean');
    expect(() => addon.cudaConformance(bad({ seed: 'x' }))).toThrow('cudaConformance: option seed must be a number');
    expect(() => addon.cudaDecodeBench(spec, bad({ context: '1024' }))).toThrow('cudaDecodeBench: option context must be a number');
    expect(() => addon.cudaDecoderGenerate(spec, bad({ promptIds: [] }))).toThrow('cudaDecoderGenerate: promptIds must be a non-empty array');
    expect(() => addon.cudaDecoderGenerate(spec, bad({ promptIds: [1], graphs: 1 }))).toThrow('cudaDecoderGenerate: option graphs must be a boolean');
    expect(() => addon.afdGpuBench(spec, bad({ transports: ['nccl', 2] }))).toThrow('afdGpuBench: option transports must be an array of strings');
    expect(() => addon.afdGpuBench(spec, bad({ port: '9' }))).toThrow('afdGpuBench: option port must be a number');
    expect(() => addon.afdSplitStageCheck(spec, bad({ exactGemm: 'no' }))).toThrow('afdSplitStageCheck: option exactGemm must be a boolean');
  });
});
