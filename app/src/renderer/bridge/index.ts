/** Picks the bridge: the Electron preload's when present, else the browser-mode socket. */
import type { LinkState, RendererBridge } from './types.js';
import { createWsBridge, tokenFromLocation } from './wsBridge.js';

export function createBridge(): RendererBridge {
  const electron = window.afd;
  if (electron) {
    return {
      kind: 'electron',
      invoke: electron.invoke.bind(electron),
      on: electron.on.bind(electron),
      onLink(listener: (state: LinkState, message: string | null) => void) {
        listener('open', null);
        return () => undefined;
      },
    };
  }
  const token = tokenFromLocation(window.location.hash, window.sessionStorage);
  if (window.location.hash) history.replaceState(null, '', window.location.pathname + window.location.search);
  const wsUrl = `${window.location.protocol === 'https:' ? 'wss' : 'ws'}://${window.location.host}/bridge`;
  return createWsBridge({ url: wsUrl, token: token ?? 'missing-token' });
}

export type { RendererBridge, LinkState } from './types.js';
