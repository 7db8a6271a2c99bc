/**
 * RoPE settings from config.json, normalised into RopeScalingSpec. Accepts both the
 * transformers 4 layout (rope_theta + rope_scaling {type|rope_type, ...}) and the
 * transformers 5 layout (rope_parameters {rope_type, rope_theta, ...}).
 */
import type { RopeScalingSpec } from '../modelSpec.js';
import { CheckpointError } from './errors.js';

/** rope types the engine implements. */
export const supportedRopeTypes = ['default', 'linear', 'llama3', 'yarn', 'dynamic'] as const;

type Raw = Record<string, unknown>;

function isRecord(v: unknown): v is Raw {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** yarn's attention scale: 0.1 * mscale * ln(factor) + 1 (1 when factor <= 1). */
export function yarnMscale(factor: number, mscale = 1): number {
  return factor <= 1 ? 1 : 0.1 * mscale * Math.log(factor) + 1;
}

/** RoPE parameters: theta and the normalised scaling. */
export interface RopeSettings {
  ropeTheta: number;
  ropeScaling: RopeScalingSpec;
  /** yarn's mscale_all_dim (0 when absent); DeepSeek scales its softmax by mscale(factor, this) ** 2. */
  mscaleAllDim: number;
}

/**
 * Read the RoPE settings of a config.json object.
 * @param defaultTheta the architecture's rope_theta default when the config has none.
 */
export function parseRope(file: string, config: Raw, defaultTheta: number, maxPositionEmbeddings: number): RopeSettings {
  let params: Raw | null = null;
  let theta: unknown = config['rope_theta'];
  const v5 = config['rope_parameters'];
  if (isRecord(v5)) {
    // transformers 5 may key the parameters by layer type; all our archs use full attention.
    params = isRecord(v5['full_attention']) ? v5['full_attention'] : v5;
    if (params['rope_theta'] !== undefined) theta = params['rope_theta'];
  } else if (isRecord(config['rope_scaling'])) {
    params = config['rope_scaling'];
  } else if (config['rope_scaling'] !== undefined && config['rope_scaling'] !== null) {
    throw new CheckpointError(file, `rope_scaling must be an object or null, got ${JSON.stringify(config['rope_scaling'])}`);
  }
  const ropeTheta = theta === undefined || theta === null ? defaultTheta : theta;
  if (typeof ropeTheta !== 'number' || !(ropeTheta > 1)) throw new CheckpointError(file, `rope_theta must be a number > 1, got ${JSON.stringify(ropeTheta)}`);

  const type = params ? (params['rope_type'] ?? params['type'] ?? 'default') : 'default';
  const num = (key: string, fallback?: number): number => {
    const v = params?.[key];
    if (v === undefined || v === null) {
      if (fallback !== undefined) return fallback;
      throw new CheckpointError(file, `rope ${String(type)} scaling needs "${key}"`, { fix: 'add it to rope_scaling / rope_parameters' });
    }
    if (typeof v !== 'number' || !Number.isFinite(v)) throw new CheckpointError(file, `rope scaling "${key}" must be a number, got ${JSON.stringify(v)}`);
    return v;
  };
  let mscaleAllDim = 0;
  const spec: RopeScalingSpec = {
    type: 'default',
    factor: 1,
    lowFreqFactor: 1,
    highFreqFactor: 1,
    originalMaxPositionEmbeddings: maxPositionEmbeddings,
    betaFast: 32,
    betaSlow: 1,
    attentionFactor: 1,
  };
  switch (type) {
    case 'default':
      break;
    case 'linear':
    case 'dynamic':
      spec.type = type === 'linear' ? 'linear' : 'dynamic';
      spec.factor = num('factor');
      spec.originalMaxPositionEmbeddings = num('original_max_position_embeddings', maxPositionEmbeddings);
      break;
    case 'llama3':
      spec.type = 'llama3';
      spec.factor = num('factor');
      spec.lowFreqFactor = num('low_freq_factor');
      spec.highFreqFactor = num('high_freq_factor');
      spec.originalMaxPositionEmbeddings = num('original_max_position_embeddings');
      if (!(spec.highFreqFactor > spec.lowFreqFactor)) {
        throw new CheckpointError(file, `rope llama3 needs high_freq_factor > low_freq_factor, got ${spec.highFreqFactor} <= ${spec.lowFreqFactor}`);
      }
      break;
    case 'yarn': {
      spec.type = 'yarn';
      spec.factor = num('factor');
      spec.originalMaxPositionEmbeddings = num('original_max_position_embeddings', maxPositionEmbeddings);
      spec.betaFast = num('beta_fast', 32);
      spec.betaSlow = num('beta_slow', 1);
      const mscale = params?.['mscale'];
      const rawMscaleAllDim = params?.['mscale_all_dim'];
      const explicit = params?.['attention_factor'];
      if (typeof rawMscaleAllDim === 'number' && rawMscaleAllDim > 0) mscaleAllDim = rawMscaleAllDim;
      if (typeof explicit === 'number') spec.attentionFactor = explicit;
      else if (typeof mscale === 'number' && mscale > 0 && mscaleAllDim > 0) {
        spec.attentionFactor = yarnMscale(spec.factor, mscale) / yarnMscale(spec.factor, mscaleAllDim);
      } else spec.attentionFactor = yarnMscale(spec.factor);
      break;
    }
    default:
      throw new CheckpointError(file, `rope type ${JSON.stringify(type)} is not supported (supported: ${supportedRopeTypes.join(', ')})`);
  }
  if (!(spec.factor > 0)) throw new CheckpointError(file, `rope scaling factor must be > 0, got ${spec.factor}`);
  if (!(spec.originalMaxPositionEmbeddings > 0)) throw new CheckpointError(file, `rope original_max_position_embeddings must be > 0, got ${spec.originalMaxPositionEmbeddings}`);
  return { ropeTheta, ropeScaling: spec, mscaleAllDim };
}
