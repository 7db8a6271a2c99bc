/** The tool-call card rendered to HTML (no DOM here; the e2e spec drives it in Chromium). */
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { ToolCallCard } from './ToolCallCard.js';

describe('ToolCallCard', () => {
  it('shows a call still streaming: the name, the arguments so far, no id yet, no form', () => {
    const html = renderToStaticMarkup(<ToolCallCard call={{ index: 0, id: '', name: 'get_weather', arguments: '{"city": "Pa' }} />);
    expect(html).toContain('aria-label="Tool call get_weather"');
    expect(html).toContain('{&quot;city&quot;: &quot;Pa</pre>');
    expect(html).toContain('data-testid="tool-call-id">…</span>');
    expect(html).not.toContain('textarea');
  });

  it('pretty-prints whole arguments and offers a labelled result form when the call waits', () => {
    const html = renderToStaticMarkup(<ToolCallCard call={{ index: 1, id: 'call_7', name: 'get_time', arguments: '{"timezone":"UTC"}' }} onAnswer={async () => true} canAnswer={false} />);
    expect(html).toContain('{\n  &quot;timezone&quot;: &quot;UTC&quot;\n}</pre>');
    expect(html).toContain('Result of get_time (call_7)<textarea');
    expect(html).toMatch(/<button[^>]*disabled=""[^>]*aria-label="Send the result of get_time"/);
  });
});
