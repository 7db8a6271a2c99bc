/**
 * The renderer's link to the console host (browser mode can lose its socket or be
 * refused a wrong token). Screens read it so they never state what they cannot know: a
 * page that is not connected shows that, not "no topology is running". When the link
 * comes back, `onReopen` refreshes what may have changed meanwhile.
 */
import { createStore, type StoreApi } from 'zustand/vanilla';
import type { LinkState as BridgeLinkState, RendererBridge } from '../bridge/types.js';

export interface LinkState {
  state: BridgeLinkState;
  message: string | null;
  /** The link has been open at least once (data on screen came from the host). */
  everOpen: boolean;
}

export function createLinkStore(bridge: RendererBridge, onReopen: () => void): StoreApi<LinkState> {
  const store = createStore<LinkState>()(() => ({ state: 'connecting', message: null, everOpen: false }));
  bridge.onLink((state, message) => {
    const before = store.getState();
    // A retry after a refusal or a loss is still that refusal or loss until it succeeds.
    if (state === 'connecting' && (before.state === 'unauthorized' || before.state === 'closed')) return;
    store.setState({ state, message, everOpen: before.everOpen || state === 'open' });
    if (state === 'open' && before.state !== 'open' && before.everOpen) onReopen();
  });
  return store;
}
