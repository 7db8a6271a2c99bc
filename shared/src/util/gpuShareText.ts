/**
 * One GPU of a launch in words, the same in the CLI's summary and the console's Launch
 * screen: which ranks it holds and how they share it.
 */
import type { GpuShareState } from '../protocol/gpuSharing.js';

/** "ffn 0 (60% of SMs), attention 0": the GPU's ranks with their SM shares under MPS. */
export function gpuRanksText(gpu: Pick<GpuShareState, 'ranks'>): string {
  return gpu.ranks.map((r) => `${r.role} ${r.rank}${r.smShare !== null ? ` (${r.smShare}% of SMs)` : ''}`).join(', ');
}

/** "MPS", "time-sliced" or "own GPU". */
export function gpuSharingLabel(gpu: Pick<GpuShareState, 'sharing'>): string {
  return gpu.sharing === 'mps' ? 'MPS' : gpu.sharing === 'time-slice' ? 'time-sliced' : 'own GPU';
}

/** "GPU 0: ffn 0, attention 0 share it under MPS" / "... time-sliced (why)" / "GPU 1: attention 1 (own GPU)". */
export function gpuShareText(gpu: GpuShareState): string {
  const ranks = gpuRanksText(gpu);
  if (gpu.sharing === 'exclusive') return `GPU ${gpu.deviceIndex}: ${ranks} (own GPU)`;
  if (gpu.sharing === 'mps') return `GPU ${gpu.deviceIndex}: ${ranks} share it under MPS`;
  return `GPU ${gpu.deviceIndex}: ${ranks} share it time-sliced${gpu.note ? ` (${gpu.note})` : ''}`;
}
