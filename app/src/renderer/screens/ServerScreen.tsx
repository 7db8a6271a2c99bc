/**
 * Server: the running topology as an OpenAI server: its base URL, model and API key
 * state, code to call it (curl, Python, TypeScript), and the live log of the requests its
 * front router served (the newest 500; a row opens the request and response bodies).
 */
import { useEffect } from 'react';
import { useFields, useLaunch, useRequests } from '../AppContext.js';
import { Banner } from '../components/Banner.js';
import { RequestDetailView } from '../components/RequestDetailView.js';
import { RequestLogTable } from '../components/RequestLogTable.js';
import { ServerEndpoint } from '../components/ServerEndpoint.js';
import { ServerSnippets } from '../components/ServerSnippets.js';
import { MODEL_PLACEHOLDER } from '../../common/requestCode.js';
import { launchName } from '../lib/launchText.js';
import { requestKey } from '../stores/requestsStore.js';
import type { ScreenProps } from './types.js';

export function ServerScreen({ navigate }: ScreenProps) {
  const progress = useLaunch((s) => s.progress);
  const { rows, loaded, error, opened, detail, detailError, load, open, close } = useFields(useRequests, 'rows', 'loaded', 'error', 'opened', 'detail', 'detailError', 'load', 'open', 'close');
  useEffect(() => {
    if (!loaded) void load();
  }, [loaded, load]);

  const running = progress?.state === 'running' && progress.routerUrl !== null;
  const openedRow = opened ? rows.find((r) => requestKey(r) === opened) : undefined;
  return (
    <>
      <h2>Server</h2>
      {running && progress.routerUrl ? (
        <>
          <ServerEndpoint info={{ baseUrl: `${progress.routerUrl}/v1`, modelId: progress.modelId, keyRequired: progress.apiKeyRequired }} />
          <ServerSnippets target={{ baseUrl: progress.routerUrl, modelId: progress.modelId ?? MODEL_PLACEHOLDER, keyRequired: progress.apiKeyRequired !== false, topology: launchName(progress) }} />
        </>
      ) : (
        <div className="panel" data-testid="server-not-running">
          <p>{progress ? `The topology is ${progress.state}: no OpenAI endpoint is serving.` : 'No topology is running: launch one to get its OpenAI endpoint.'}</p>
          <button className="btn primary" onClick={() => navigate(progress ? 'launch' : 'topology')}>
            {progress ? 'Open the Launch screen' : 'Choose a topology'}
          </button>
        </div>
      )}
      {error && <Banner kind="err" message={error} />}
      <div className="panel">
        <div className="row">
          <h3 style={{ margin: 0 }}>Requests</h3>
          <span className="muted small" data-testid="requests-count">
            {rows.length} shown · the newest 500 kept · probes (/health, /metrics) not logged
          </span>
        </div>
        <div className="requests-scroll">
          <RequestLogTable rows={rows} opened={opened} onOpen={(r) => void open(r)} />
        </div>
      </div>
      {openedRow && <RequestDetailView row={openedRow} detail={detail} error={detailError} onClose={close} />}
    </>
  );
}
