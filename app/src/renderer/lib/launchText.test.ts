import { describe, expect, it } from 'vitest';
import type { LaunchProgress, RankState } from '@afd/shared';
import { frozenReason, launchName, notReadyText, recoveryText, sendBlockedReason, STALE_AFTER_MS } from './launchText.js';

const rank = (role: RankState['role'], r: number): RankState => ({ role, rank: r, agentId: 'a', state: 'ready', pid: 1, apiUrl: null, progress: null, exitCode: null, message: null });
const launch = (state: LaunchProgress['state'], message: string | null = null): LaunchProgress => ({ launchId: 'L', state, ranks: [rank('ffn', 0), rank('attention', 0), rank('attention', 1)], routerUrl: null, message, cleanup: null, model: null, modelId: null, apiKeyRequired: null, gpus: [] });

describe('what screens say about a launch', () => {
  it('names it', () => {
    expect(launchName(launch('running'))).toBe('2A1F');
    expect(launchName({ ranks: [rank('colocated', 0)] })).toBe('1 colocated replica');
    expect(launchName({ ranks: [rank('ffn', 0), rank('attention', 0), rank('prefill', 0), rank('prefill', 1)] })).toBe('2P1A1F');
  });

  it('says why the Playground cannot chat, in grammatical English, and nothing before it knows', () => {
    expect(notReadyText(null, false)).toBeNull();
    expect(notReadyText(null, true)).toBe('No topology is running. Launch one to chat with it.');
    expect(notReadyText(launch('running'), true)).toBeNull();
    expect(notReadyText(launch('failed', 'ffn rank 0 on agent a exited with code 1: port in use'), true)).toBe('The topology failed: ffn rank 0 on agent a exited with code 1: port in use');
    expect(notReadyText(launch('stopped'), true)).toBe('The topology is stopped. Launch it again to chat.');
    expect(notReadyText(launch('launching'), true)).toMatch(/^The topology is launching/);
  });

  it('says in a few words why Send is off, and lets it on only with a running topology or before it knows', () => {
    expect(sendBlockedReason(launch('running'), true, true)).toBeNull();
    expect(sendBlockedReason(null, false, true)).toBeNull();
    expect(sendBlockedReason(null, true, true)).toBe('no topology is running');
    expect(sendBlockedReason(launch('launching'), true, true)).toBe('the topology is still launching');
    expect(sendBlockedReason(launch('failed'), true, true)).toBe('the topology failed');
    expect(sendBlockedReason(launch('stopped'), true, true)).toBe('the topology is stopped');
    expect(sendBlockedReason(launch('running'), true, false)).toBe('not connected to the console host');
  });

  it('says when the Dashboard shows history', () => {
    const t = 1_000_000;
    expect(frozenReason(launch('running'), 'L', t, t + 500)).toBeNull();
    expect(frozenReason(launch('stopped'), 'L', t, t + 500)).toMatch(/^The topology is stopped: these are its last metrics/);
    expect(frozenReason(launch('running'), 'L', t, t + STALE_AFTER_MS + 2000)).toMatch(/^No metrics for 5 s/);
    expect(frozenReason(launch('running'), 'OLD', t, t)).toMatch(/an earlier launch/);
    expect(frozenReason(null, 'OLD', t, t)).toMatch(/an earlier launch/);
  });
});

describe('recoveryText', () => {
  it('says the restarts and the last cause, nothing before any', () => {
    expect(recoveryText({})).toBeNull();
    expect(recoveryText({ recovery: { restarts: 1, lastCause: 'ffn rank 0 on agent a was killed by SIGKILL' } })).toBe('Restarts: 1 · last cause: ffn rank 0 on agent a was killed by SIGKILL');
    expect(recoveryText({ recovery: { restarts: 2, lastCause: null } })).toBe('Restarts: 2');
  });
});
