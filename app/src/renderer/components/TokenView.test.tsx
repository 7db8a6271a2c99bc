/** The token view's text (no DOM here; e2e/specs/playgroundChats.spec.ts hovers it in Chromium). */
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { percentOf, tokenTitle, TokenView } from './TokenView.js';

const t = { token: ' cat', logprob: Math.log(0.25), top: [{ token: ' dog', logprob: Math.log(0.5) }, { token: ' cat', logprob: Math.log(0.25) }, { token: '\n', logprob: Math.log(0.0004) }] };

describe('TokenView', () => {
  it('percentages: one decimal, tiny ones in two significant digits, a sure token as 100%', () => {
    expect(percentOf(Math.log(0.25))).toBe('25.0%');
    expect(percentOf(Math.log(0.0004))).toBe('0.040%');
    expect(percentOf(0)).toBe('100%');
  });

  it('the hover text: the token quoted, its probability and logprob, then the alternatives with the chosen one marked', () => {
    expect(tokenTitle(t)).toBe(['" cat"  25.0%  (logprob -1.386)', 'top alternatives:', '  " dog"  50.0%', '▸ " cat"  25.0%', '  "\\n"  0.040%'].join('\n'));
    expect(tokenTitle({ token: 'x', logprob: -0.5, top: [] })).toBe('"x"  60.7%  (logprob -0.500)');
  });

  it('renders a span per token with its title, shaded more the less likely it is', () => {
    const html = renderToStaticMarkup(<TokenView tokens={[{ token: 'Hi', logprob: 0, top: [] }, t]} />);
    expect(html.match(/data-testid="token"/g)).toHaveLength(2);
    expect(html).toContain('background:rgba(220, 80, 60, 0.000)');
    expect(html).toContain('background:rgba(220, 80, 60, 0.450)');
    expect(html).toContain('title="&quot; cat&quot;  25.0%  (logprob -1.386)');
  });
});
