/**
 * A scripted console service behind the page's bridge socket, for Playground specs that
 * must not depend on what the topology's API can do yet: the page (the real renderer,
 * served by the real browser-mode host) talks to this instead of ConsoleService, through
 * Playwright's WebSocket routing. Every request is checked against the bridge contract
 * (as the real host checks it) and every answer and push too, so the page sees only what
 * the real service could send. A running launch is reported (or the one the spec passes,
 * or none); chat replies come from a script the spec passes, and the spec may push other
 * frames (metric snapshots) to every page connected.
 */
import type { Page, WebSocketRoute } from '@playwright/test';
import { validateBridgePush, validateBridgeRequest, validateBridgeResponse, type BridgePush, type BridgePushChannel, type BridgeRequest, type LaunchProgress } from '@afd/shared';

/** What a scripted reply does: pushes, each after a pause (ms, default 20) and, when given, after `gate` settles. */
export type ScriptStep = { pauseMs?: number; gate?: Promise<void> } & ({ channel: 'chat.accepted'; payload: Omit<BridgePush<'chat.accepted'>, 'chatId'> } | { channel: 'chat.delta'; payload: Omit<BridgePush<'chat.delta'>, 'chatId'> } | { channel: 'chat.done'; payload: Omit<BridgePush<'chat.done'>, 'chatId'> });

export interface ScriptedConsole {
  /** Every chat.start request, as validated (defaults filled). */
  chats: BridgeRequest<'chat.start'>[];
  /** Contract violations seen (the spec expects none). */
  violations: string[];
  /** Sends a push to every page socket connected now (checked against the contract like the rest). */
  push<C extends BridgePushChannel>(channel: C, payload: BridgePush<C>): void;
}

export interface ScriptedConsoleOptions {
  /** What launch.get answers (default SCRIPTED_LAUNCH; null: no topology). */
  launch?: LaunchProgress | null;
}

export const SCRIPTED_LAUNCH: LaunchProgress = {
  launchId: 'scripted',
  state: 'running',
  ranks: [],
  routerUrl: 'http://127.0.0.1:18000',
  message: null,
  cleanup: null,
  model: { name: 'scripted-model', parameters: 1_000_000, description: 'a scripted console service answers', examplePrompts: [] },
  modelId: 'scripted-model',
  apiKeyRequired: false,
  gpus: [],
};

/** Routes the page's bridge socket to a scripted service; `reply` scripts each chat.start. */
export async function routeScriptedConsole(page: Page, reply: (request: BridgeRequest<'chat.start'>, n: number) => ScriptStep[], opts: ScriptedConsoleOptions = {}): Promise<ScriptedConsole> {
  const sockets = new Set<WebSocketRoute>();
  const state: ScriptedConsole = { chats: [], violations: [], push: (channel, payload) => sockets.forEach((ws) => push(ws, channel, payload)) };
  const launch = opts.launch === undefined ? SCRIPTED_LAUNCH : opts.launch;
  const answers: Record<string, (payload: unknown) => unknown> = {
    'agents.list': () => ({ agents: [] }),
    'launch.get': () => ({ launch }),
    'chat.stop': () => ({ stopped: false }),
    // No metrics: the Dashboard's charts start empty.
    'metrics.history': () => ({ launchId: null, history: { tiers: [] } }),
  };
  const push = (ws: WebSocketRoute, channel: BridgePushChannel, payload: unknown): void => {
    const ok = validateBridgePush(channel, payload);
    if (!ok.ok) state.violations.push(`push ${channel}: ${ok.error}`);
    ws.send(JSON.stringify({ kind: 'push', channel, payload }));
  };
  await page.routeWebSocket(/\/bridge/, (ws) => {
    sockets.add(ws);
    ws.onClose(() => sockets.delete(ws));
    ws.onMessage((data) => {
      const frame = JSON.parse(String(data)) as { kind: string; id: string; channel: string; payload: unknown };
      if (frame.kind !== 'invoke') return;
      const request = validateBridgeRequest(frame.channel, frame.payload);
      if (!request.ok) {
        state.violations.push(`invoke ${frame.channel}: ${request.error}`);
        ws.send(JSON.stringify({ kind: 'result', id: frame.id, ok: false, error: request.error }));
        return;
      }
      if (frame.channel === 'chat.start') {
        const chat = request.value as BridgeRequest<'chat.start'>;
        state.chats.push(chat);
        const chatId = `chat-${state.chats.length}`;
        ws.send(JSON.stringify({ kind: 'result', id: frame.id, ok: true, payload: { chatId } }));
        void (async () => {
          for (const step of reply(chat, state.chats.length)) {
            await step.gate;
            await new Promise((r) => setTimeout(r, step.pauseMs ?? 20));
            push(ws, step.channel, { chatId, ...step.payload });
          }
        })();
        return;
      }
      const answer = answers[frame.channel];
      if (!answer) {
        ws.send(JSON.stringify({ kind: 'result', id: frame.id, ok: false, error: `the scripted console does not answer ${frame.channel}` }));
        return;
      }
      const payload = answer(request.value);
      const checked = validateBridgeResponse(frame.channel as 'agents.list', payload);
      if (!checked.ok) state.violations.push(`result ${frame.channel}: ${checked.error}`);
      ws.send(JSON.stringify({ kind: 'result', id: frame.id, ok: true, payload }));
    });
  });
  return state;
}
