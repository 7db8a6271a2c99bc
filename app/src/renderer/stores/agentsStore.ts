/** Agents: the list pushed by the service, and add/remove with readable errors. */
import { createStore, type StoreApi } from 'zustand/vanilla';
import type { AgentInfo } from '@afd/shared';
import type { RendererBridge } from '../bridge/types.js';

export interface AgentsState {
  agents: AgentInfo[];
  /** The last add/remove failure, for the Agents screen banner. */
  error: string | null;
  /** True while an add is in flight. */
  adding: boolean;
  add(url: string, token: string): Promise<boolean>;
  remove(agentId: string): Promise<void>;
  refresh(): Promise<void>;
  clearError(): void;
}

export function createAgentsStore(bridge: RendererBridge): StoreApi<AgentsState> {
  const store = createStore<AgentsState>()((set) => ({
    agents: [],
    error: null,
    adding: false,
    async add(url, token) {
      const u = url.trim();
      if (!/^wss?:\/\/\S+$/.test(u)) {
        set({ error: `"${u}" is not an agent URL: use ws://HOST:PORT (as \`afd-agent serve\` prints it)` });
        return false;
      }
      if (token.trim() === '') {
        set({ error: 'the token is empty: paste the agent token (from $AFD_HOME/agent-token on the agent host)' });
        return false;
      }
      set({ adding: true, error: null });
      try {
        await bridge.invoke('agents.add', { url: u, token: token.trim() });
        const { agents } = await bridge.invoke('agents.list', {});
        set({ agents, adding: false });
        return true;
      } catch (e) {
        set({ error: (e as Error).message, adding: false });
        return false;
      }
    },
    async remove(agentId) {
      try {
        await bridge.invoke('agents.remove', { agentId });
      } catch (e) {
        set({ error: (e as Error).message });
      }
    },
    async refresh() {
      try {
        const { agents } = await bridge.invoke('agents.list', {});
        set({ agents });
      } catch (e) {
        set({ error: (e as Error).message });
      }
    },
    clearError: () => set({ error: null }),
  }));
  bridge.on('agents.state', (p) => store.setState({ agents: p.agents }));
  return store;
}
