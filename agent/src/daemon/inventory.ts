/**
 * The host as `inventory.get` reports it: OS facts from node:os, devices from the native
 * probe run in a child process (a broken GPU stack degrades to CPU only, with the reason),
 * and the models it can launch: the demo model when this install has it, and those under
 * $AFD_HOME/models, and which of them a launch without a model directory serves.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { arch, availableParallelism, cpus, freemem, hostname, platform, totalmem } from 'node:os';
import { join } from 'node:path';
import type { ProbeResult } from '@afd/native';
import { MPS_NOT_REPORTED, type DefaultModel, type Device, type Inventory, type MpsStatus } from '@afd/shared';
import { describeDefaultModel } from '../model/defaultModel.js';
import { demoModelName, findDemoModelDir } from '../model/demoModel.js';
import { isStagingDirName } from '../model/makeModel.js';
import { runProbeInChild, type ProbeOutcome } from '../probe/runProbe.js';
import { afdModelsDir } from '../util/afdHome.js';

/** 13000 -> "13.0", 12040 -> "12.4"; null for 0 (not built / no driver). */
export function cudaVersionString(v: number): string | null {
  if (!v) return null;
  return `${Math.floor(v / 1000)}.${Math.floor((v % 1000) / 10)}`;
}

/** Routed experts of a config.json (Qwen3-MoE num_experts, Mixtral num_local_experts); undefined when dense or unreadable. */
function numExpertsOf(configPath: string): number | undefined {
  try {
    const c = JSON.parse(readFileSync(configPath, 'utf8')) as { num_experts?: unknown; num_local_experts?: unknown };
    const n = c.num_experts ?? c.num_local_experts;
    return typeof n === 'number' && Number.isInteger(n) && n > 0 ? n : undefined;
  } catch {
    return undefined; // the launch validates the checkpoint and says what is wrong
  }
}

/** Model checkpoints under `dir` (folders holding a config.json, not make-model's half-written staging copies), with their expert count. */
export function findLocalModels(dir: string): Inventory['models'] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && !isStagingDirName(e.name) && existsSync(join(dir, e.name, 'config.json')))
    .map((e) => {
      const numExperts = numExpertsOf(join(dir, e.name, 'config.json'));
      return { name: e.name, dir: join(dir, e.name), ...(numExperts ? { numExperts } : {}) };
    })
    .sort((a, b) => a.name.localeCompare(b.name));
}

/** The demo model (when present) and the model folders under `dir`. */
export function launchableModels(dir: string): Inventory['models'] {
  let demo: string | null = null;
  try {
    demo = findDemoModelDir();
  } catch {
    // a wrong AFD_DEMO_MODEL_DIR is reported where the model is used, not in the inventory
  }
  return [...(demo ? [{ name: demoModelName, dir: demo }] : []), ...findLocalModels(dir).filter((m) => m.dir !== demo)];
}

/** The model a launch without a model directory gets here; null when AFD_DEMO_MODEL_DIR is wrong (the launch says so). */
function defaultModelOf(modelsDir: string): DefaultModel | null {
  try {
    return describeDefaultModel(modelsDir);
  } catch {
    return null;
  }
}

/** MPS needs compute capability 3.5 or newer (SM shares need 7.0: older devices ignore them). */
const MPS_MIN_COMPUTE_CAPABILITY = 3.5;

/** Whether ranks sharing a device with this compute capability can run under MPS on a host with `mps`. */
export function deviceMps(computeCapability: string, mps: MpsStatus): { available: boolean; reason: string | null } {
  if (mps.unavailable) return { available: false, reason: mps.unavailable };
  const cc = Number(computeCapability);
  if (Number.isFinite(cc) && cc < MPS_MIN_COMPUTE_CAPABILITY) return { available: false, reason: `CUDA MPS needs compute capability ${MPS_MIN_COMPUTE_CAPABILITY} or newer; this device has ${computeCapability}` };
  return { available: true, reason: null };
}

/** Builds the inventory from a probe result (pure apart from node:os reads). */
export function buildInventory(probe: ProbeResult, degraded: string | undefined, agentVersion: string, modelsDir: string, advertiseHost: string | null = null, mps: MpsStatus = MPS_NOT_REPORTED): Inventory {
  const cores = availableParallelism();
  const cpuDevice: Device = {
    kind: 'cpu',
    index: 0,
    name: cpus()[0]?.model.trim() || `${arch()} CPU`,
    cores,
    totalMemoryBytes: totalmem(),
    freeMemoryBytes: freemem(),
  };
  const cudaDevices: Device[] = probe.devices.map((d) => ({
    kind: 'cuda',
    index: d.index,
    name: d.name,
    totalMemoryBytes: d.totalMemoryBytes,
    freeMemoryBytes: d.freeMemoryBytes,
    computeCapability: d.computeCapability,
    multiProcessors: d.multiProcessors,
    mps: deviceMps(d.computeCapability, mps),
  }));
  const backends = probe.backends.filter((b): b is 'cpu' | 'cuda' => b === 'cpu' || b === 'cuda');
  if (!backends.includes('cpu')) backends.unshift('cpu');
  return {
    hostname: hostname(),
    platform: platform(),
    arch: arch(),
    cpu: { model: cpuDevice.name, cores },
    memory: { totalBytes: totalmem(), freeBytes: freemem() },
    devices: [cpuDevice, ...cudaDevices],
    backends,
    versions: {
      agent: agentVersion,
      node: process.versions.node,
      addon: probe.version,
      addonVariant: probe.variant,
      cudaRuntime: cudaVersionString(probe.cudaRuntimeVersion),
      cudaDriver: cudaVersionString(probe.cudaDriverVersion),
    },
    libraries: { cublas: probe.cublas, cublasLt: probe.cublasLt, nccl: probe.nccl },
    cudaError: degraded ?? probe.cudaError,
    models: launchableModels(modelsDir),
    advertiseHost,
    defaultModel: defaultModelOf(modelsDir),
    mps,
  };
}

/** Caches the probe (and the MPS status) briefly: they start processes, and free memory need not be fresher. */
export class InventorySource {
  private cached: { at: number; outcome: Promise<ProbeOutcome>; mps: Promise<MpsStatus> } | undefined;

  constructor(
    private readonly agentVersion: string,
    private readonly modelsDir = afdModelsDir(),
    private readonly maxAgeMs = 10_000,
    private readonly probe: () => Promise<ProbeOutcome> = () => runProbeInChild(),
    /** Reported as the inventory's advertiseHost. */
    private readonly advertiseHost: string | null = null,
    /** CUDA MPS on this host (the agent's MpsHost.status); omitted = not reported. */
    private readonly mpsStatus: () => Promise<MpsStatus> = async () => MPS_NOT_REPORTED,
  ) {}

  async get(): Promise<Inventory> {
    const now = Date.now();
    if (!this.cached || now - this.cached.at > this.maxAgeMs) this.cached = { at: now, outcome: this.probe(), mps: this.mpsStatus() };
    const [outcome, mps] = await Promise.all([this.cached.outcome, this.cached.mps]);
    return buildInventory(outcome.result, outcome.degraded, this.agentVersion, this.modelsDir, this.advertiseHost, mps);
  }
}
