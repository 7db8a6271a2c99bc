import { describe, expect, it } from 'vitest';
import { gpuGroups, type RankPlacement } from '@afd/shared';
import { effectiveSharingMode, gpuShareStates, sharingEnv, timeSliceWarning } from './gpuSharingPlan.js';

const on = (role: RankPlacement['role'], rank: number, deviceIndex: number, smShare?: number): RankPlacement => ({ role, rank, agentId: 'a', backend: 'cuda', deviceIndex, ...(smShare ? { smShare } : {}) });
// 3A2F on three GPUs: ffn 0 + attention 0 on GPU 0, ffn 1 + attention 1 on GPU 1, attention 2 alone on GPU 2.
const groups = gpuGroups([on('ffn', 0, 0, 70), on('ffn', 1, 1), on('attention', 0, 0), on('attention', 1, 1), on('attention', 2, 2)]);

describe('effectiveSharingMode', () => {
  it('takes the spec\'s mode unless it says auto, then the agent\'s', () => {
    expect(effectiveSharingMode('auto', 'auto')).toBe('auto');
    expect(effectiveSharingMode('auto', 'time-slice')).toBe('time-slice');
    expect(effectiveSharingMode('time-slice', 'mps')).toBe('time-slice');
    expect(effectiveSharingMode('mps', 'auto')).toBe('mps');
  });

  it('refuses mps on an agent told never to start MPS', () => {
    expect(() => effectiveSharingMode('mps', 'time-slice')).toThrow(/asks for gpuSharing mps, but this agent runs with --gpu-sharing time-slice/);
  });
});

describe('gpuShareStates and sharingEnv', () => {
  it('under MPS: shared GPUs say mps with SM shares (placement over role), a lone rank has its own GPU', () => {
    const states = gpuShareStates(groups, { attention: 30, ffn: 60 }, { mps: { pipeDirectory: '/h/mps/pipe' } });
    expect(states.map((s) => [s.deviceIndex, s.sharing, s.ranks.map((r) => `${r.role}${r.rank}:${r.smShare}`).join(' ')])).toEqual([
      [0, 'mps', 'ffn0:70 attention0:30'],
      [1, 'mps', 'ffn1:60 attention1:30'],
      [2, 'exclusive', 'attention2:null'],
    ]);
    expect(states[0]!.note).toBe('MPS (control daemon on /h/mps/pipe)');
    expect(sharingEnv(states, { role: 'ffn', rank: 0 }, '/h/mps/pipe')).toEqual({ CUDA_MPS_PIPE_DIRECTORY: '/h/mps/pipe', CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: '70' });
    expect(sharingEnv(gpuShareStates(groups, {}, { mps: { pipeDirectory: '/p' } }), { role: 'attention', rank: 1 }, '/p')).toEqual({ CUDA_MPS_PIPE_DIRECTORY: '/p' });
    expect(sharingEnv(states, { role: 'attention', rank: 2 }, '/h/mps/pipe')).toEqual({});
  });

  it('time-sliced: no MPS environment, no SM shares, the reason as the note', () => {
    const states = gpuShareStates(groups, { ffn: 60 }, { mps: null, timeSliceReason: 'the launch asks for gpuSharing time-slice' });
    expect(states.map((s) => s.sharing)).toEqual(['time-slice', 'time-slice', 'exclusive']);
    expect(states[0]!.ranks.every((r) => r.smShare === null)).toBe(true);
    expect(states[0]!.note).toBe('the launch asks for gpuSharing time-slice');
    expect(sharingEnv(states, { role: 'ffn', rank: 0 }, null)).toEqual({});
  });
});

describe('timeSliceWarning', () => {
  const shared = groups.filter((g) => g.placements.length > 1);
  it('names the GPUs and ranks, the cost and the fix', () => {
    const w = timeSliceWarning(shared, 'MPS could not be started: nvidia-cuda-mps-control was not found', false, true);
    expect(w).toMatch(/^GPU 0 \(ffn 0, attention 0\), GPU 1 \(ffn 1, attention 1\) are shared without MPS \(MPS could not be started: nvidia-cuda-mps-control was not found\): the driver time-slices/);
    expect(w).toContain('make nvidia-cuda-mps-control available to the agent (PATH or /usr/local/nvidia/bin)');
    expect(w).toMatch(/the SM shares asked for apply under MPS only and are ignored$/);
    expect(timeSliceWarning(shared.slice(0, 1), 'the launch asks for gpuSharing time-slice', true, false)).toMatch(/^GPU 0 \(ffn 0, attention 0\) is shared without MPS .*use GPU sharing auto or mps \(--gpu-sharing\)/);
  });
});
