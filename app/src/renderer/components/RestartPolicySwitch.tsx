/**
 * The Launch screen's restart policy switch: changes the running launch's policy on every
 * agent of it, live (topology.setRestartPolicy). It shows the policy the agents report, so
 * another console's change shows here too.
 */
import { useEffect, useState, type KeyboardEvent } from 'react';
import type { BridgeRequest, RestartPolicy } from '@afd/shared';

export interface RestartPolicySwitchProps {
  /** The policy in effect (launch.progress `restart`). */
  restart: RestartPolicy;
  /** Off while the launch cannot take a change (failed, stopping, stopped) or an action is in flight. */
  disabled: boolean;
  onChange(change: BridgeRequest<'topology.setRestartPolicy'>): Promise<boolean>;
}

const seconds = (ms: number): string => `${Number((ms / 1000).toFixed(1))} s`;

/** What the policy does, in a sentence. */
export function restartPolicyText(r: RestartPolicy): string {
  if (r.policy === 'never') return 'Off: a rank that dies fails the launch; Restart relaunches it.';
  return `On: the agents restart a rank that dies (back-off ${seconds(r.backoffMs)}, doubled up to ${seconds(r.maxBackoffMs)}); requests meanwhile get 503 with Retry-After.`;
}

export function RestartPolicySwitch({ restart, disabled, onChange }: RestartPolicySwitchProps) {
  const on = restart.policy === 'on-failure';
  // What the user asked for, shown until the agents answer (then the policy they report; a refusal shows the old one).
  const [wanted, setWanted] = useState<boolean | null>(null);
  const [max, setMax] = useState(String(restart.maxRestarts));
  useEffect(() => setMax(String(restart.maxRestarts)), [restart.maxRestarts]);
  const commitMax = (): void => {
    const n = Number(max);
    if (max.trim() === '' || !Number.isInteger(n) || n < 0 || n > 1000) return setMax(String(restart.maxRestarts));
    if (n !== restart.maxRestarts) void onChange({ maxRestarts: n }).then((ok) => ok || setMax(String(restart.maxRestarts)));
  };
  const switchTo = (value: boolean): void => {
    setWanted(value);
    void onChange({ policy: value ? 'on-failure' : 'never' }).finally(() => setWanted(null));
  };
  const onKey = (e: KeyboardEvent<HTMLInputElement>): void => {
    if (e.key === 'Enter') commitMax();
  };
  return (
    <div className="panel row" data-testid="launch-restart">
      <label className="inline" title="Applies now, on every agent of the launch">
        <input type="checkbox" role="switch" checked={wanted ?? on} disabled={disabled} onChange={(e) => switchTo(e.target.checked)} data-testid="launch-restart-policy" />
        Restart a rank that dies
      </label>
      <label className="inline" title="A rank ready for a minute starts counting from zero; one failure more and the launch fails">
        Most restarts in a row
        <input type="number" min={0} max={1000} value={max} disabled={disabled || !on} onChange={(e) => setMax(e.target.value)} onBlur={commitMax} onKeyDown={onKey} style={{ width: '5rem' }} data-testid="launch-max-restarts" />
      </label>
      <span className="muted small" data-testid="launch-restart-note">
        {restartPolicyText(restart)}
      </span>
    </div>
  );
}
