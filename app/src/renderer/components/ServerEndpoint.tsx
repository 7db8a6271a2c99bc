/**
 * The running topology's OpenAI endpoint: its base URL, the model id requests name, and
 * the API key's state. The key itself is shown (and copyable) only when the user asks and
 * the console holds it.
 */
import { useEffect, useState } from 'react';
import { useStores } from '../AppContext.js';
import { CopyButton } from './CopyButton.js';

export interface EndpointInfo {
  /** e.g. http://127.0.0.1:8000/v1 */
  baseUrl: string;
  modelId: string | null;
  /** As the router's agent says; null when it did not. */
  keyRequired: boolean | null;
}

/** The key state in words, given whether the console holds a key. */
export function keyStateText(keyRequired: boolean | null, held: boolean | null): string {
  if (keyRequired === false) return 'none: the API is open (an agent serves an open API on loopback only)';
  const where = held === null ? '' : held ? ': the console holds it (--api-key or $AFD_API_KEY); the code reads it from $AFD_API_KEY' : ": set on the agent ($AFD_API_KEY where it runs); the console does not hold it";
  return keyRequired === null ? `not reported by the agent${held ? '; the console sends the one it holds' : ''}` : `required${where}`;
}

export function ServerEndpoint({ info }: { info: EndpointInfo }) {
  const { bridge } = useStores();
  const [held, setHeld] = useState<boolean | null>(null);
  const [key, setKey] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    bridge.invoke('api.key', {}).then(
      (r) => setHeld(r.held),
      (e: Error) => setError(`cannot ask the console about its API key: ${e.message}`),
    );
  }, [bridge]);
  const reveal = async (): Promise<void> => {
    try {
      setKey((await bridge.invoke('api.key', { reveal: true })).apiKey);
    } catch (e) {
      setError(`cannot read the API key: ${(e as Error).message}`);
    }
  };
  return (
    <div className="panel" data-testid="server-endpoint">
      <h3>Endpoint</h3>
      <table>
        <tbody>
          <tr>
            <th>Base URL</th>
            <td className="row">
              <span className="mono" data-testid="server-base-url">{info.baseUrl}</span>
              <CopyButton text={info.baseUrl} label="Copy the base URL" />
            </td>
          </tr>
          <tr>
            <th>Model</th>
            <td className="mono" data-testid="server-model">{info.modelId ?? 'not known yet (GET /v1/models lists it)'}</td>
          </tr>
          <tr>
            <th>API key</th>
            <td>
              <div className="row">
                <span data-testid="server-key-state">{keyStateText(info.keyRequired, held)}</span>
                {held && info.keyRequired !== false && (key === null ? (
                  <button className="btn small" onClick={() => void reveal()} data-testid="server-key-show">
                    Show key
                  </button>
                ) : (
                  <>
                    <span className="mono" data-testid="server-key-value">{key}</span>
                    <CopyButton text={key} label="Copy the API key" />
                    <button className="btn small" onClick={() => setKey(null)} data-testid="server-key-hide">
                      Hide
                    </button>
                  </>
                ))}
              </div>
              {error && <div className="small" style={{ color: 'var(--err)' }}>{error}</div>}
            </td>
          </tr>
        </tbody>
      </table>
    </div>
  );
}
