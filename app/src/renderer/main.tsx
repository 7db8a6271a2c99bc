/** Renderer entry: picks the bridge, creates the stores, mounts the app. */
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import './theme.css';
import { App } from './App.js';
import { StoresProvider, createStores } from './AppContext.js';
import { createBridge } from './bridge/index.js';
import { ErrorBoundary } from './components/ErrorBoundary.js';

function showFatal(root: HTMLElement, err: unknown): void {
  root.innerHTML = '';
  const box = document.createElement('div');
  box.className = 'error-screen';
  box.setAttribute('role', 'alert');
  const h = document.createElement('h2');
  h.textContent = 'The console could not start';
  const pre = document.createElement('pre');
  pre.className = 'log';
  pre.textContent = err instanceof Error ? (err.stack ?? err.message) : String(err);
  box.append(h, pre);
  root.append(box);
}

const rootEl = document.getElementById('root');
if (rootEl) {
  try {
    const stores = createStores(createBridge());
    createRoot(rootEl).render(
      <StrictMode>
        <ErrorBoundary where="The console">
          <StoresProvider stores={stores}>
            <App />
          </StoresProvider>
        </ErrorBoundary>
      </StrictMode>,
    );
  } catch (err) {
    showFatal(rootEl, err);
  }
}
