import { describe, expect, it } from 'vitest';
import { gpuShareText, gpuSharingLabel } from './gpuShareText.js';

const ranks = [
  { role: 'ffn' as const, rank: 0, smShare: 60 },
  { role: 'attention' as const, rank: 0, smShare: null },
];

describe('gpuShareText', () => {
  it('says which ranks a GPU holds and how they share it', () => {
    expect(gpuShareText({ agentId: 'a', deviceIndex: 0, ranks, sharing: 'mps', note: 'MPS (control daemon on /x)' })).toBe('GPU 0: ffn 0 (60% of SMs), attention 0 share it under MPS');
    expect(gpuShareText({ agentId: 'a', deviceIndex: 1, ranks, sharing: 'time-slice', note: 'the launch asks for gpuSharing time-slice' })).toBe(
      'GPU 1: ffn 0 (60% of SMs), attention 0 share it time-sliced (the launch asks for gpuSharing time-slice)',
    );
    expect(gpuShareText({ agentId: 'a', deviceIndex: 2, ranks: [ranks[1]!], sharing: 'exclusive', note: null })).toBe('GPU 2: attention 0 (own GPU)');
    expect(['mps', 'time-slice', 'exclusive'].map((sharing) => gpuSharingLabel({ sharing: sharing as 'mps' }))).toEqual(['MPS', 'time-sliced', 'own GPU']);
  });
});
