/**
 * The facade the preload exposes as `window.afd`, built over a minimal IPC surface so it
 * can be tested without Electron. Channel names and request payloads are validated here
 * (again in main); pushes are delivered only for known channels.
 */
import {
  isBridgePushChannel,
  validateBridgeRequest,
  type BridgeInvokeChannel,
  type BridgePush,
  type BridgePushChannel,
  type BridgeRequestInput,
  type BridgeResponse,
  type ConsoleBridge,
} from '@afd/shared';

/** IPC channel of invoke calls (renderer -> main). */
export const IPC_INVOKE = 'afd:invoke';
/** IPC channel of pushes (main -> renderer). */
export const IPC_PUSH = 'afd:push';

/** What main answers an invoke with (errors as values: Electron mangles thrown messages). */
export type InvokeReply = { ok: true; payload: unknown } | { ok: false; error: string };

export interface IpcLike {
  invoke(channel: string, ...args: unknown[]): Promise<unknown>;
  on(channel: string, listener: (event: unknown, ...args: unknown[]) => void): void;
  removeListener(channel: string, listener: (event: unknown, ...args: unknown[]) => void): void;
}

export function createBridgeApi(ipc: IpcLike): ConsoleBridge {
  return {
    async invoke<C extends BridgeInvokeChannel>(channel: C, request: BridgeRequestInput<C>): Promise<BridgeResponse<C>> {
      const checked = validateBridgeRequest(String(channel), request);
      if (!checked.ok) throw new Error(checked.error);
      const reply = (await ipc.invoke(IPC_INVOKE, channel, checked.value)) as InvokeReply;
      if (!reply || typeof reply !== 'object' || typeof reply.ok !== 'boolean') throw new Error('the console main process sent a malformed reply');
      if (!reply.ok) throw new Error(reply.error);
      return reply.payload as BridgeResponse<C>;
    },
    on<C extends BridgePushChannel>(channel: C, listener: (payload: BridgePush<C>) => void): () => void {
      if (!isBridgePushChannel(String(channel))) throw new Error(`unknown bridge push channel "${String(channel)}"`);
      if (typeof listener !== 'function') throw new Error('bridge listener must be a function');
      const handler = (_event: unknown, ...args: unknown[]): void => {
        if (args[0] === channel) listener(args[1] as BridgePush<C>);
      };
      ipc.on(IPC_PUSH, handler);
      return () => ipc.removeListener(IPC_PUSH, handler);
    },
  };
}
