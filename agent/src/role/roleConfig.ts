/**
 * `afd-agent role <colocated|attention|ffn>` options -> the rank config (shared schema).
 * Layers, later over earlier: --rank-config (the whole rank config, what the agent passes),
 * --config (its `afd` section, for a person at a shell), then the explicit flags; the one
 * schema validates and defaults the result, so the agent and a person at a shell get the
 * same checks and messages.
 */
import { readFileSync } from 'node:fs';
import { mergeConfigInput, parseAfdConfigJson, resolveRankConfig, type ProcessRole, type RankConfig, type RankConfigInput } from '@afd/shared';
import { configInputFromFlags } from '../cli/configFlags.js';
import { agentEnv } from '../util/env.js';

/** A JSON object literal, or the path of a JSON file holding one. */
function readJsonArgument(flag: string, value: string): string {
  if (value.trimStart().startsWith('{')) return value;
  try {
    return readFileSync(value, 'utf8');
  } catch (err) {
    throw new Error(`${flag} ${value}: cannot read the file (${(err as Error).message}); pass a JSON object or a JSON file path`);
  }
}

/** --config: the `afd` section, checked alone first so its errors name its own fields. */
function readAfdSection(config: string | undefined): object {
  if (config === undefined) return {};
  const text = readJsonArgument('--config', config);
  const parsed = parseAfdConfigJson(text);
  if (!parsed.ok) throw new Error(`--config: ${parsed.issues.map((i) => `${i.path || 'config'}: ${i.message}`).join('; ')}`);
  return JSON.parse(text) as object; // merged and validated again below
}

/** --rank-config: the whole rank config (validated with the flags on top, below). */
function readRankConfig(value: string | undefined): RankConfigInput {
  if (value === undefined) return {};
  const text = readJsonArgument('--rank-config', value);
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not a JSON object');
    return parsed as RankConfigInput;
  } catch (err) {
    throw new Error(`--rank-config: not a JSON object (${(err as Error).message})`);
  }
}

function isRole(role: string): role is ProcessRole {
  return role === 'colocated' || role === 'attention' || role === 'ffn' || role === 'prefill';
}

/** The role command's options (commander's, values as text) as a validated, fully defaulted rank config. */
export function resolveRoleConfig(role: string, opts: Record<string, unknown>): RankConfig {
  if (!isRole(role)) throw new Error(`unknown role "${role}": use colocated, attention, ffn or prefill`);
  const flags = configInputFromFlags(opts, 'role') as RankConfigInput;
  const layered = mergeConfigInput<RankConfigInput>(
    mergeConfigInput<RankConfigInput>(readRankConfig(opts['rankConfig'] as string | undefined), { afd: readAfdSection(opts['config'] as string | undefined) }),
    mergeConfigInput<RankConfigInput>(flags, { afd: { role } }),
  );
  return resolveRankConfig(layered);
}

/** The bearer key serving ranks require on /v1: --api-key, else $AFD_API_KEY, else none (never part of the config). */
export function roleApiKey(opts: Record<string, unknown>, env: NodeJS.ProcessEnv = process.env): string | undefined {
  return (opts['apiKey'] as string | undefined) ?? agentEnv(env).apiKey;
}
