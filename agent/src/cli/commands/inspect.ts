import type { Command } from 'commander';
import type { MpsStatus } from '@afd/shared';
import { probe, type ProbeResult } from '@afd/native';
import { MpsHost } from '../../gpu/MpsHost.js';
import { afdHome } from '../../util/afdHome.js';
import { runProbeInChild } from '../../probe/runProbe.js';
import { cudaVersionText } from '../../probe/cudaMessage.js';

function formatBytes(n: number): string {
  return `${(n / 2 ** 30).toFixed(1)} GiB`;
}

/** Human-readable probe report: why there is no GPU is said once, on the devices line. */
export function formatProbe(p: ProbeResult): string {
  const lines = [
    `afd native ${p.version} (${p.variant} build), backends: ${p.backends.join(', ')}`,
    p.cudaRuntimeVersion > 0 ? `CUDA runtime ${cudaVersionText(p.cudaRuntimeVersion)}, driver ${p.cudaDriverVersion > 0 ? cudaVersionText(p.cudaDriverVersion) : 'none'}` : 'CUDA: not built',
  ];
  if (p.devices.length === 0) lines.push(`devices: cpu only${p.cudaError ? ` (${p.cudaError})` : ''}`);
  for (const d of p.devices) {
    lines.push(`  cuda:${d.index} ${d.name}  sm_${d.computeCapability.replace('.', '')}  ${formatBytes(d.totalMemoryBytes)} (${formatBytes(d.freeMemoryBytes)} free)  ${d.multiProcessors} SMs`);
  }
  const libs = [['cuBLAS', p.cublas], ['cuBLASLt', p.cublasLt], ['NCCL', p.nccl]] as const;
  const unprobed = libs.every(([, l]) => !l.loaded && l.error === libs[0][1].error);
  if (p.devices.length === 0 && unprobed) {
    lines.push(`  ${libs.map(([n]) => n).join(', ')}: ${p.cublas.error.split('\n')[0] || 'not loaded'}`);
  } else {
    for (const [name, lib] of libs) lines.push(`  ${name}: ${lib.loaded ? `${lib.version} (${lib.soname})` : `not loaded: ${lib.error.split('\n')[0]}`}`);
  }
  return lines.join('\n');
}

/** CUDA MPS on this host in one line: the daemon that answers, the control program, or why there is none. */
export function formatMps(mps: MpsStatus): string {
  if (mps.unavailable) return `CUDA MPS: unavailable: ${mps.unavailable}`;
  if (mps.daemon) return `CUDA MPS: control daemon running on ${mps.daemon.pipeDirectory} (${mps.daemon.managedByAgent ? 'the agents\' own' : 'not the agents\': reused, never stopped'}); ${mps.controlProgram}`;
  return `CUDA MPS: available (${mps.controlProgram}); no daemon runs: an agent starts one when ranks of a launch share a GPU`;
}

export function registerInspect(program: Command): void {
  program
    .command('inspect')
    .description('report the native build, backends, CUDA devices and libraries (probe runs in a child process), and CUDA MPS on this host')
    .option('--json', 'print the report as JSON on stdout (the probe, plus "mps")')
    .action(async (opts: { json?: boolean }) => {
      // A degraded probe (the child crashed) reports its reason as the CUDA error: shown once below.
      const [outcome, mps] = await Promise.all([runProbeInChild(), new MpsHost({ home: afdHome(), env: process.env }).status()]);
      process.stdout.write(opts.json ? `${JSON.stringify({ ...outcome.result, mps }, null, 2)}\n` : `${formatProbe(outcome.result)}\n${formatMps(mps)}\n`);
    });

  // Hidden: the child side of runProbeInChild. Prints the raw probe as JSON.
  program
    .command('__probe', { hidden: true })
    .action(() => {
      process.stdout.write(JSON.stringify(probe()));
    });
}
