/**
 * The console shell: a keyboard-navigable screen list (arrow keys, Home/End, Alt+1..8),
 * the link banner in browser mode, and each screen inside its own error boundary.
 */
import { useEffect, useRef, useState, type KeyboardEvent } from 'react';
import { useLaunch, useLink, useStores } from './AppContext.js';
import { Banner } from './components/Banner.js';
import { ErrorBoundary } from './components/ErrorBoundary.js';
import { launchName } from './lib/launchText.js';
import type { ScreenId, ScreenProps } from './screens/types.js';
import { AgentsScreen } from './screens/AgentsScreen.js';
import { DashboardScreen } from './screens/DashboardScreen.js';
import { LaunchScreen } from './screens/LaunchScreen.js';
import { LogsScreen } from './screens/LogsScreen.js';
import { PlanScreen } from './screens/PlanScreen.js';
import { PlaygroundScreen } from './screens/PlaygroundScreen.js';
import { ServerScreen } from './screens/ServerScreen.js';
import { TopologyScreen } from './screens/TopologyScreen.js';

export const SCREENS = [
  { id: 'agents', title: 'Agents', View: AgentsScreen },
  { id: 'topology', title: 'Topology', View: TopologyScreen },
  { id: 'launch', title: 'Launch', View: LaunchScreen },
  { id: 'playground', title: 'Playground', View: PlaygroundScreen },
  { id: 'dashboard', title: 'Dashboard', View: DashboardScreen },
  { id: 'logs', title: 'Logs', View: LogsScreen },
  { id: 'server', title: 'Server', View: ServerScreen },
  { id: 'plan', title: 'Plan', View: PlanScreen },
] as const satisfies readonly { id: ScreenId; title: string; View: (p: ScreenProps) => unknown }[];

function initialScreen(): ScreenId {
  const q = new URLSearchParams(window.location.search).get('screen');
  return SCREENS.some((s) => s.id === q) ? (q as ScreenId) : 'playground';
}

function LaunchBadge() {
  const p = useLaunch((s) => s.progress);
  const loaded = useLaunch((s) => s.loaded);
  const link = useLink((s) => s.state);
  // A page that is not connected does not know what runs: it says so instead.
  if (link !== 'open') return <span className="badge warn" data-testid="launch-badge">{link === 'unauthorized' ? 'not connected' : 'reconnecting…'}</span>;
  if (!loaded) return <span className="badge">…</span>;
  if (!p) return <span className="badge" data-testid="launch-badge">no topology</span>;
  const kind = p.state === 'running' ? 'ok' : p.state === 'failed' ? 'err' : p.state === 'launching' ? 'info' : 'warn';
  const name = launchName(p);
  return (
    <span className={`badge ${kind}`} data-testid="launch-badge">
      {name} {p.state}
    </span>
  );
}

export function App() {
  const { bridge } = useStores();
  const [screen, setScreen] = useState<ScreenId>(initialScreen);
  const link = useLink((s) => s);
  const tabs = useRef<(HTMLButtonElement | null)[]>([]);

  useEffect(() => {
    const onKey = (e: globalThis.KeyboardEvent): void => {
      if (!e.altKey || e.ctrlKey || e.metaKey) return;
      const i = Number(e.key) - 1;
      const target = SCREENS[i];
      if (target) {
        e.preventDefault();
        setScreen(target.id);
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);

  const onTabKey = (e: KeyboardEvent<HTMLButtonElement>, i: number): void => {
    let next = -1;
    if (e.key === 'ArrowDown' || e.key === 'ArrowRight') next = (i + 1) % SCREENS.length;
    else if (e.key === 'ArrowUp' || e.key === 'ArrowLeft') next = (i - 1 + SCREENS.length) % SCREENS.length;
    else if (e.key === 'Home') next = 0;
    else if (e.key === 'End') next = SCREENS.length - 1;
    if (next < 0) return;
    e.preventDefault();
    setScreen(SCREENS[next]!.id);
    tabs.current[next]?.focus();
  };

  const current = SCREENS.find((s) => s.id === screen) ?? SCREENS[0];
  const View = current.View;
  return (
    <div className="app">
      <nav className="app-nav" aria-label="Screens">
        <h1>AFD Console</h1>
        <div role="tablist" aria-orientation="vertical" style={{ display: 'flex', flexDirection: 'column', gap: '0.25rem' }}>
          {SCREENS.map((s, i) => (
            <button
              key={s.id}
              ref={(el) => {
                tabs.current[i] = el;
              }}
              role="tab"
              id={`tab-${s.id}`}
              aria-selected={s.id === screen}
              aria-controls="screen"
              tabIndex={s.id === screen ? 0 : -1}
              data-testid={`nav-${s.id}`}
              onClick={() => setScreen(s.id)}
              onKeyDown={(e) => onTabKey(e, i)}
              title={`${s.title} (Alt+${i + 1})`}
            >
              <span>{s.title}</span>
              <span className="muted small">Alt+{i + 1}</span>
            </button>
          ))}
        </div>
        <div className="nav-footer">
          <LaunchBadge />
          <div style={{ marginTop: 6 }}>{bridge.kind === 'web' ? 'browser mode' : 'desktop'}</div>
        </div>
      </nav>
      <main className="app-main" id="screen" role="tabpanel" aria-labelledby={`tab-${screen}`}>
        {link.state !== 'open' && link.state !== 'connecting' && (
          <Banner kind={link.state === 'unauthorized' ? 'err' : 'warn'} message={link.message ?? 'not connected to the console host'} testId="link-banner" />
        )}
        {link.state === 'unauthorized' || (link.state !== 'open' && !link.everOpen) ? (
          <div className="panel" data-testid="not-connected">
            <h2>{current.title}</h2>
            <p>
              {link.state === 'unauthorized'
                ? 'This page is not connected to the console host, so it cannot show agents, launches or chats.'
                : 'Connecting to the console host…'}
            </p>
          </div>
        ) : (
          <ErrorBoundary key={screen} where={`The ${current.title} screen`}>
            <View navigate={setScreen} />
          </ErrorBoundary>
        )}
      </main>
    </div>
  );
}
