/**
 * Browser-mode bridge: the same ConsoleBridge over one WebSocket to the console's web
 * host. The per-run token comes from the page URL's #token= fragment (kept in
 * sessionStorage so a reload works) and travels as a WebSocket subprotocol.
 */
import {
  isBridgePushChannel,
  RequestCorrelator,
  type BridgeInvokeChannel,
  type BridgePush,
  type BridgePushChannel,
  type BridgeRequestInput,
  type BridgeResponse,
  type BridgeWireMessage,
} from '@afd/shared';
import type { LinkState, RendererBridge } from './types.js';

export const BRIDGE_SUBPROTOCOL = 'afd.bridge.v1';
export const BRIDGE_TOKEN_PREFIX = 'afd.token.';

/** Minimal socket surface (the DOM WebSocket satisfies it; tests pass a fake). */
export interface SocketLike {
  readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  onopen: ((ev: unknown) => void) | null;
  onclose: ((ev: { code: number; reason: string }) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onerror: ((ev: unknown) => void) | null;
}

export interface WsBridgeOptions {
  url: string;
  token: string;
  /** Creates the socket (default: the DOM WebSocket). */
  connect?: (url: string, protocols: string[]) => SocketLike;
  /** Per-call timeout, ms. */
  callTimeoutMs?: number;
}

export function createWsBridge(opts: WsBridgeOptions): RendererBridge {
  const listeners = new Map<string, Set<(p: unknown) => void>>();
  const linkListeners = new Set<(s: LinkState, m: string | null) => void>();
  /** Pending invokes by id, each with its channel. */
  const calls = new RequestCorrelator<BridgeInvokeChannel>();
  let link: LinkState = 'connecting';
  let linkMessage: string | null = null;
  let socket: SocketLike | null = null;
  let retryMs = 250;
  const queue: string[] = [];
  const connect = opts.connect ?? ((url, protocols) => new WebSocket(url, protocols) as unknown as SocketLike);

  const setLink = (s: LinkState, m: string | null): void => {
    link = s;
    linkMessage = m;
    for (const l of linkListeners) l(s, m);
  };

  const open = (): void => {
    setLink('connecting', linkMessage);
    const ws = connect(opts.url, [BRIDGE_SUBPROTOCOL, `${BRIDGE_TOKEN_PREFIX}${opts.token}`]);
    socket = ws;
    let opened = false;
    ws.onopen = () => {
      opened = true;
      retryMs = 250;
      setLink('open', null);
      for (const frame of queue.splice(0)) ws.send(frame);
    };
    ws.onmessage = (ev) => {
      if (typeof ev.data !== 'string') return;
      let msg: BridgeWireMessage;
      try {
        msg = JSON.parse(ev.data) as BridgeWireMessage;
      } catch {
        return;
      }
      if (msg.kind === 'result') {
        calls.settle(msg.id, () => (msg.ok ? { ok: true, value: msg.payload } : { ok: false, error: new Error(msg.error ?? 'the console service reported an error without a message') }));
      } else if (msg.kind === 'push' && isBridgePushChannel(msg.channel)) {
        for (const l of listeners.get(msg.channel) ?? []) l(msg.payload);
      }
    };
    ws.onclose = (ev) => {
      if (socket !== ws) return;
      socket = null;
      calls.failAll(new Error('lost the connection to the console host; the call may not have completed'));
      if (!opened && ev.code !== 1000) {
        // The upgrade was refused; a wrong token never becomes right by retrying often.
        setLink('unauthorized', 'the console host refused this page (wrong or missing token): open the URL the console printed, including #token=...');
        setTimeout(open, 5000);
        return;
      }
      setLink('closed', `lost the connection to the console host (${ev.code}${ev.reason ? `: ${ev.reason}` : ''}); reconnecting…`);
      setTimeout(open, retryMs);
      retryMs = Math.min(retryMs * 2, 5000);
    };
    ws.onerror = () => undefined;
  };
  open();

  return {
    kind: 'web',
    invoke<C extends BridgeInvokeChannel>(channel: C, request: BridgeRequestInput<C>): Promise<BridgeResponse<C>> {
      const ms = opts.callTimeoutMs ?? 120_000;
      const { id, answer } = calls.start<BridgeResponse<C>>(channel, ms, () => new Error(`the console host did not answer ${channel} within ${Math.round(ms / 1000)} s`));
      const frame = JSON.stringify({ kind: 'invoke', id, channel, payload: request });
      try {
        if (socket && link === 'open') socket.send(frame);
        else queue.push(frame);
      } catch (err) {
        calls.fail(id, new Error(`could not send ${channel} to the console host: ${(err as Error).message}`));
      }
      return answer;
    },
    on<C extends BridgePushChannel>(channel: C, listener: (payload: BridgePush<C>) => void): () => void {
      let set = listeners.get(channel);
      if (!set) listeners.set(channel, (set = new Set()));
      const l = listener as (p: unknown) => void;
      set.add(l);
      return () => set.delete(l);
    },
    onLink(listener) {
      linkListeners.add(listener);
      listener(link, linkMessage);
      return () => linkListeners.delete(listener);
    },
  };
}

/** Reads the token from #token=... (and remembers it for reloads), or null. */
export function tokenFromLocation(hash: string, storage: Pick<Storage, 'getItem' | 'setItem'> | null): string | null {
  const m = /(?:^#|&)token=([^&]+)/.exec(hash);
  if (m?.[1]) {
    const token = decodeURIComponent(m[1]);
    storage?.setItem('afd.console.token', token);
    return token;
  }
  return storage?.getItem('afd.console.token') ?? null;
}
