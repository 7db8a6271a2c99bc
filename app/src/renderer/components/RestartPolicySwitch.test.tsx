/** The restart policy switch rendered to HTML (no DOM here; e2e/specs/recovery.spec.ts drives it in Chromium against a real agent). */
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { restartPolicySchema } from '@afd/shared';
import { RestartPolicySwitch, restartPolicyText } from './RestartPolicySwitch.js';

const onChange = async (): Promise<boolean> => true;
/** The <input> tag with this test id. */
const input = (html: string, testId: string): string => new RegExp(`<input[^>]*data-testid="${testId}"[^>]*>`).exec(html)?.[0] ?? '';

describe('RestartPolicySwitch', () => {
  it('on: checked, the limit editable, and says what happens to a rank that dies', () => {
    const restart = restartPolicySchema.parse({ policy: 'on-failure', maxRestarts: 7 });
    const html = renderToStaticMarkup(<RestartPolicySwitch restart={restart} disabled={false} onChange={onChange} />);
    expect(input(html, 'launch-restart-policy')).toMatch(/type="checkbox" role="switch".*checked=""/);
    expect(input(html, 'launch-max-restarts')).toContain('value="7"');
    expect(input(html, 'launch-max-restarts')).not.toContain('disabled');
    expect(html).toContain('On: the agents restart a rank that dies (back-off 1 s, doubled up to 30 s); requests meanwhile get 503 with Retry-After.');
  });

  it('off: unchecked, the limit disabled; the whole switch is disabled when the launch cannot change', () => {
    const restart = restartPolicySchema.parse({ policy: 'never' });
    const off = renderToStaticMarkup(<RestartPolicySwitch restart={restart} disabled={false} onChange={onChange} />);
    expect(input(off, 'launch-restart-policy')).not.toContain('checked');
    expect(input(off, 'launch-restart-policy')).not.toContain('disabled');
    expect(input(off, 'launch-max-restarts')).toContain('disabled=""');
    expect(off).toContain('Off: a rank that dies fails the launch; Restart relaunches it.');
    const frozen = renderToStaticMarkup(<RestartPolicySwitch restart={restart} disabled onChange={onChange} />);
    expect(input(frozen, 'launch-restart-policy')).toContain('disabled=""');
  });

  it('names back-offs under a second in seconds', () => {
    expect(restartPolicyText(restartPolicySchema.parse({ policy: 'on-failure', backoffMs: 250, maxBackoffMs: 4000 }))).toMatch(/back-off 0\.3 s, doubled up to 4 s/);
  });
});
