/**
 * The renderer's view of the bridge: the shared ConsoleBridge plus the link status
 * (browser mode can lose its socket; Electron IPC cannot).
 */
import type { ConsoleBridge } from '@afd/shared';

export type LinkState = 'connecting' | 'open' | 'closed' | 'unauthorized';

export interface RendererBridge extends ConsoleBridge {
  /** Which host the renderer talks to. */
  readonly kind: 'electron' | 'web';
  /** Reports the link state now and on every change; returns the unsubscribe function. */
  onLink(listener: (state: LinkState, message: string | null) => void): () => void;
}

declare global {
  interface Window {
    /** Set by the Electron preload (contextBridge); absent in browser mode. */
    afd?: ConsoleBridge;
  }
}
