/**
 * Checks of a topology draft against the hosts before launch: the model directory as
 * every agent that runs ranks sees it (model.inspect), the roles it can serve there, and
 * hosts the placement oversubscribes (more CPU ranks than cores, more weights than memory).
 */
import { countOf, type AgentInfo, type LoadFormat, type ModelInspectResult, type ProcessRole } from '@afd/shared';
import { formatBytes } from '../lib/format.js';
import { inspectKey, type Inspection } from './inspectStore.js';

/** A placement as the checks need it. */
export interface PlacedRank {
  role: ProcessRole;
  rank: number;
  agentId: string;
  backend: 'cpu' | 'cuda';
  deviceIndex: number;
}

export interface DraftChecks {
  /** Blocking, each naming what and why. */
  problems: string[];
  /** Worth knowing, not blocking. */
  warnings: string[];
  /** Not known yet (an agent is still being asked); blocks launch until answered. */
  pending: string[];
}

const byAgent = (placements: readonly PlacedRank[]): Map<string, PlacedRank[]> => {
  const m = new Map<string, PlacedRank[]>();
  for (const p of placements) m.set(p.agentId, [...(m.get(p.agentId) ?? []), p]);
  return m;
};

/**
 * The model directory on every agent that runs ranks: refused, config only, or missing a
 * role's files. With load format dummy the weights are generated, so only the config (and
 * the tokenizer, for the ranks that serve text) must be there.
 */
export function modelDirChecks(dir: string, placements: readonly PlacedRank[], inspections: Readonly<Record<string, Inspection>>, loadFormat: LoadFormat = 'auto'): DraftChecks {
  const out: DraftChecks = { problems: [], warnings: [], pending: [] };
  if (dir === '' || !dir.startsWith('/')) return out;
  for (const [agentId, ranks] of byAgent(placements)) {
    const i = inspections[inspectKey(agentId, dir)];
    if (!i || i.state === 'checking') {
      out.pending.push(`checking ${dir} on agent ${agentId}…`);
      continue;
    }
    if (i.state === 'failed') {
      out.problems.push(`cannot check ${dir} on agent ${agentId}: ${i.error}`);
      continue;
    }
    const r = i.result;
    const dummy = loadFormat === 'dummy';
    if (dummy && r.config === null) {
      out.problems.push(`model directory on agent ${agentId}: ${r.reason ?? r.status} (load format dummy still needs a valid config.json)`);
      continue;
    }
    if (!dummy && r.status !== 'ready') {
      // A config-only directory is servable, with load format dummy (Weights: dummy).
      out.problems.push(`model directory on agent ${agentId}: ${r.reason ?? r.status}${r.status === 'config-only' ? '; choose Weights: dummy to run it with random weights' : ''}`);
      continue;
    }
    if (dummy && r.weights.present) out.warnings.push(`load format dummy: the safetensors in ${dir} on agent ${agentId} are not loaded; every rank generates random weights`);
    // A prefill rank runs the whole model: it needs what a colocated rank needs.
    const serves = (role: ProcessRole): boolean => r.roles.includes(role) || (role === 'prefill' && r.roles.includes('colocated'));
    const roles = [...new Set(ranks.map((p) => p.role))].filter((role) => !serves(role));
    if (roles.length > 0) out.problems.push(`${roles.join(' and ')} ranks cannot run from ${dir} on agent ${agentId}: ${r.reason ?? `it serves only ${r.roles.join(', ')}`}`);
    if (r.tokenizer.present && !r.tokenizer.chatTemplate) out.warnings.push(`${dir} on agent ${agentId} has no chat template: the Playground's raw completion mode works, chat does not`);
  }
  return out;
}

/** The model's summary for one agent, when known: "Qwen3MoeForCausalLM · 48 layers · 30.5 B parameters · 57 GiB safetensors". */
export function modelSummary(r: ModelInspectResult): string {
  const c = r.config;
  const parts: string[] = [];
  if (c) {
    const linear = c.linearAttentionLayers ?? 0;
    parts.push(c.architecture, countOf(c.numLayers, 'layer') + (linear > 0 ? ` (${linear} Gated DeltaNet)` : ''), `${formatCount(c.parameters)} parameters`);
    if (c.numExperts > 0) parts.push(`${c.numExperts} experts (${c.numExpertsPerTok} per token)`);
  }
  parts.push(r.weights.present ? `${formatBytes(r.weights.bytes)} safetensors (${countOf(r.weights.files, 'file')})` : 'no weights');
  return parts.join(' · ');
}

/** 30_500_000_000 -> "30.5 B". */
export function formatCount(n: number): string {
  const units: [number, string][] = [
    [1e12, 'T'],
    [1e9, 'B'],
    [1e6, 'M'],
    [1e3, 'K'],
  ];
  for (const [v, u] of units) if (n >= v) return `${(n / v).toFixed(n / v >= 100 ? 0 : 1)} ${u}`;
  return String(n);
}

/**
 * Hosts the placement oversubscribes: more CPU ranks than cores on an agent; and, when
 * the model's size is known, more weights than the host's memory (CPU ranks) or a GPU's.
 */
export function hostLoadWarnings(placements: readonly PlacedRank[], agents: readonly AgentInfo[], model: ModelInspectResult | null): string[] {
  const warnings: string[] = [];
  const info = new Map(agents.map((a) => [a.agentId, a]));
  const roleBytes = model?.config?.roleBytes;
  for (const [agentId, ranks] of byAgent(placements)) {
    const inv = info.get(agentId)?.inventory;
    if (!inv) continue;
    const cpu = ranks.filter((p) => p.backend === 'cpu');
    if (cpu.length > inv.cpu.cores) {
      warnings.push(`${countOf(cpu.length, 'CPU rank')} on agent ${agentId}, which has ${countOf(inv.cpu.cores, 'core')}: the ranks would share cores and every step would be slow (use fewer ranks, or more agents)`);
    }
    if (!roleBytes) continue;
    // A prefill rank holds the whole model's weights, as a colocated rank does.
    const bytesOf = (p: PlacedRank): number => roleBytes[p.role === 'prefill' ? 'colocated' : p.role];
    const cpuBytes = cpu.reduce((sum, p) => sum + bytesOf(p), 0);
    if (cpu.length > 0 && cpuBytes > inv.memory.totalBytes * 0.9) {
      warnings.push(`the CPU ranks on agent ${agentId} need about ${formatBytes(cpuBytes)} of weights; the host has ${formatBytes(inv.memory.totalBytes)} of memory`);
    }
    for (const d of inv.devices) {
      if (d.kind !== 'cuda') continue;
      const onGpu = ranks.filter((p) => p.backend === 'cuda' && p.deviceIndex === d.index);
      const bytes = onGpu.reduce((sum, p) => sum + bytesOf(p), 0);
      if (onGpu.length > 0 && bytes > d.totalMemoryBytes * 0.9) {
        warnings.push(`the ranks on agent ${agentId} cuda:${d.index} need about ${formatBytes(bytes)} of weights; the GPU has ${formatBytes(d.totalMemoryBytes)}`);
      }
    }
  }
  return warnings;
}
