/** Screen ids and the props every screen gets. */
export type ScreenId = 'agents' | 'topology' | 'launch' | 'playground' | 'dashboard' | 'logs' | 'server' | 'plan';

export interface ScreenProps {
  /** Switches to another screen (e.g. from an empty state's call to action). */
  navigate: (id: ScreenId) => void;
}
