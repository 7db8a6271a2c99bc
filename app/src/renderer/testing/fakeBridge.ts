/** A bridge for store unit tests: scripted invoke answers, and pushes on demand. */
import type { BridgeInvokeChannel, BridgePush, BridgePushChannel } from '@afd/shared';
import type { LinkState, RendererBridge } from '../bridge/types.js';

export type InvokeHandler = (request: unknown) => unknown;

export interface FakeBridge extends RendererBridge {
  /** Every invoke, in order. */
  calls: { channel: BridgeInvokeChannel; request: unknown }[];
  handle(channel: BridgeInvokeChannel, handler: InvokeHandler): void;
  emit<C extends BridgePushChannel>(channel: C, payload: BridgePush<C>): void;
}

export function createFakeBridge(): FakeBridge {
  const handlers = new Map<string, InvokeHandler>();
  const listeners = new Map<string, Set<(p: unknown) => void>>();
  const calls: FakeBridge['calls'] = [];
  return {
    kind: 'web',
    calls,
    handle(channel, handler) {
      handlers.set(channel, handler);
    },
    async invoke(channel, request) {
      calls.push({ channel, request });
      const h = handlers.get(channel);
      if (!h) throw new Error(`no fake handler for ${channel}`);
      return (await h(request)) as never;
    },
    on(channel, listener) {
      let set = listeners.get(channel);
      if (!set) listeners.set(channel, (set = new Set()));
      set.add(listener as (p: unknown) => void);
      return () => set.delete(listener as (p: unknown) => void);
    },
    emit(channel, payload) {
      for (const l of listeners.get(channel) ?? []) l(payload);
    },
    onLink(listener: (s: LinkState, m: string | null) => void) {
      listener('open', null);
      return () => undefined;
    },
  };
}
