import { describe, expect, it } from 'vitest';
import type { LinkState as BridgeLinkState, RendererBridge } from '../bridge/types.js';
import { createLinkStore } from './linkStore.js';

function scriptedBridge(): { bridge: RendererBridge; set(s: BridgeLinkState, m?: string): void } {
  let listener: ((s: BridgeLinkState, m: string | null) => void) | null = null;
  const bridge = {
    kind: 'web',
    invoke: () => Promise.reject(new Error('unused')),
    on: () => () => undefined,
    onLink(l: (s: BridgeLinkState, m: string | null) => void) {
      listener = l;
      l('connecting', null);
      return () => undefined;
    },
  } as unknown as RendererBridge;
  return { bridge, set: (s, m) => listener?.(s, m ?? null) };
}

describe('link store', () => {
  it('keeps a refusal through its retries, and refreshes the data when a lost link comes back', () => {
    const { bridge, set } = scriptedBridge();
    let refreshes = 0;
    const link = createLinkStore(bridge, () => void refreshes++);
    set('unauthorized', 'wrong token');
    set('connecting');
    expect(link.getState()).toMatchObject({ state: 'unauthorized', message: 'wrong token', everOpen: false });
    set('open');
    expect(refreshes).toBe(0); // the first open: the stores load on their own
    set('closed', 'lost');
    set('connecting');
    expect(link.getState().state).toBe('closed');
    set('open');
    expect(link.getState()).toMatchObject({ state: 'open', everOpen: true });
    expect(refreshes).toBe(1);
  });
});
