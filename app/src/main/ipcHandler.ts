/**
 * Main-process side of the Electron bridge: answers invoke calls only from the app's own
 * page, validates through ConsoleService.invoke, and replies errors as values.
 */
import type { InvokeReply } from '../preload/bridgeApi.js';

export interface Invoker {
  invoke(channel: string, payload: unknown): Promise<unknown>;
}

/** True when a frame URL is the console's own renderer (file:// under its folder). */
export function isTrustedSender(frameUrl: string | undefined, rendererIndexUrl: string): boolean {
  if (!frameUrl) return false;
  const strip = (u: string): string => u.split('#')[0]!.split('?')[0]!;
  return strip(frameUrl) === strip(rendererIndexUrl);
}

export async function handleInvoke(service: Invoker, frameUrl: string | undefined, rendererIndexUrl: string, channel: unknown, payload: unknown): Promise<InvokeReply> {
  if (!isTrustedSender(frameUrl, rendererIndexUrl)) return { ok: false, error: `refused: ${frameUrl ?? 'an unknown frame'} is not the console page` };
  if (typeof channel !== 'string') return { ok: false, error: 'bridge channel must be a string' };
  try {
    return { ok: true, payload: await service.invoke(channel, payload) };
  } catch (e) {
    return { ok: false, error: e instanceof Error ? e.message : String(e) };
  }
}
