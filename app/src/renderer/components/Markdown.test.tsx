/** Replies as markdown rendered to HTML (no DOM here; e2e/specs/playgroundLayout.spec.ts renders them in Chromium). */
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { Markdown } from './Markdown.js';

const html = (text: string): string => renderToStaticMarkup(<Markdown text={text} />);

describe('Markdown', () => {
  it('renders GFM tables, strikethrough and task lists', () => {
    const out = html('| a | b |\n|:--|--:|\n| 1 | 2 |\n\n~~gone~~ kept\n\n- [x] done\n- [ ] open');
    expect(out).toMatch(/<table>.*<th[^>]*>a<\/th>.*<td[^>]*>2<\/td>.*<\/table>/s);
    expect(out).toContain('<del>gone</del> kept');
    expect(out).toContain('<ul class="contains-task-list">');
    expect(out).toMatch(/<li class="task-list-item"><input type="checkbox" disabled="" checked=""\/> done<\/li>/);
    expect(out).toMatch(/<li class="task-list-item"><input type="checkbox" disabled=""\/> open<\/li>/);
  });

  it('typesets inline and display math with KaTeX', () => {
    const out = html('Energy: $E=mc^2$.\n\n$$\n\\int_0^1 x\\,dx = \\frac{1}{2}\n$$');
    // Inline: a .katex span with MathML (annotated with the source) and the HTML rendering.
    expect(out).toMatch(/Energy: <span class="katex">.*<annotation encoding="application\/x-tex">E=mc\^2<\/annotation>.*<\/span>\./s);
    expect(out).toContain('<span class="katex-display">');
    expect(out).toContain('<annotation encoding="application/x-tex">\\int_0^1 x\\,dx = \\frac{1}{2}</annotation>');
    // The display formula replaced its code block: no copy button, no <pre>.
    expect(out).not.toContain('<pre>');
  });

  it('keeps raw HTML and script as text, and TeX cannot make links, classes or styles', () => {
    const out = html('<script>alert(1)</script> <img src=x onerror="alert(2)">\n\n$\\href{javascript:alert(3)}{x}$ $\\htmlClass{evil}{y}$ $\\htmlStyle{color:red}{z}$');
    expect(out).not.toMatch(/<script|<img|<a |href=/);
    expect(out).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    // The TeX source is kept as text (MathML's annotation), never as an attribute.
    expect(out.replace(/<annotation[^>]*>[^<]*<\/annotation>/g, '')).not.toMatch(/javascript:|evil|color:red/);
    // Each untrusted command shows as its name in KaTeX's error colour.
    for (const command of ['href', 'htmlClass', 'htmlStyle']) expect(out).toContain(`<span class="mord" style="color:#cc0000">\\${command}</span>`);
  });

  it('a malformed formula shows its source as an error, and the rest of the reply renders', () => {
    const out = html('Broken $\\frac{1}{$ and **bold**');
    expect(out).toMatch(/<span class="katex-error" title="ParseError: [^"]*" style="color:#cc0000">\\frac\{1\}\{<\/span> and <strong>bold<\/strong>/);
  });

  it('dollars that read as prices stay text', () => {
    expect(html('It costs $5 and $10, or $20.')).toBe('<div class="markdown" data-testid="markdown"><p>It costs $5 and $10, or $20.</p></div>');
    expect(html('From $3$4 on')).not.toContain('katex');
    expect(html('Is $x$ 5?')).toContain('<span class="katex">');
  });
});
