/**
 * An assistant message as markdown through react-markdown: GitHub-flavoured (tables,
 * strikethrough, task lists, autolinks: remark-gfm), math as TeX between `$...$` (inline)
 * and `$$...$$` (display) typeset by KaTeX (remark-math, rehype-katex; its stylesheet and
 * fonts are bundled, nothing is fetched), code blocks highlighted (rehype-highlight) and
 * copyable. Never raw HTML from the model: HTML in a reply shows as the text it is, so a
 * `<script>` stays inert. The tree is sanitised (rehype-sanitize, GitHub's schema) before
 * KaTeX runs: what KaTeX adds is its own markup for the TeX source, and with `trust` off it
 * makes no links, ids, classes or styles from the source (\href, \htmlClass... render as
 * errors), so the one step that adds elements after the sanitiser takes no markup from
 * the model.
 */
import 'katex/dist/katex.min.css';
import { memo, useState, type ReactNode } from 'react';
import ReactMarkdown, { type Components, type Options } from 'react-markdown';
import rehypeHighlight from 'rehype-highlight';
import rehypeKatex from 'rehype-katex';
import rehypeSanitize from 'rehype-sanitize';
import remarkGfm from 'remark-gfm';
import remarkMath from 'remark-math';
import { copyText } from '../lib/clipboard.js';

interface MdNode {
  type: string;
  value?: string;
  children?: MdNode[];
  position?: { start: { offset?: number }; end: { offset?: number } };
}

/** remark plugin: HTML in the markdown becomes plain text (before rehype, so nothing drops it). */
function htmlAsText() {
  const walk = (node: MdNode): void => {
    if (node.type === 'html') node.type = 'text';
    node.children?.forEach(walk);
  };
  return (tree: MdNode) => walk(tree);
}

/**
 * remark plugin: inline math that reads like prices is text again. As in pandoc, a `$`
 * opens math only before a non-space and closes it only after one, and a closing `$` is
 * not followed by a digit: "costs $5 and $10" stays text, "$E=mc^2$" is math.
 */
function dollarsAsText() {
  const walk = (node: MdNode, source: string): void => {
    node.children?.forEach((child, i) => {
      if (child.type !== 'inlineMath') return walk(child, source);
      const start = child.position?.start.offset;
      const end = child.position?.end.offset;
      if (start === undefined || end === undefined) return;
      const value = child.value ?? '';
      if (/^\s|\s$/.test(value) || /^\d/.test(source.slice(end))) node.children![i] = { type: 'text', value: source.slice(start, end) };
    });
  };
  return (tree: MdNode, file: { value: unknown }) => walk(tree, String(file.value));
}

/** The text under a hast node (a code block's source). */
function textOf(node: MdNode | undefined): string {
  if (!node) return '';
  if (node.type === 'text') return node.value ?? '';
  return (node.children ?? []).map(textOf).join('');
}

function CodeBlock({ children, source }: { children: ReactNode; source: string }) {
  const [copied, setCopied] = useState<'copied' | 'failed' | null>(null);
  const copy = async (): Promise<void> => {
    setCopied((await copyText(source)) ? 'copied' : 'failed');
    setTimeout(() => setCopied(null), 1500);
  };
  return (
    <div className="code-block">
      <button className="btn small code-copy" onClick={() => void copy()} aria-label="Copy code" data-testid="code-copy">
        {copied === 'copied' ? 'Copied' : copied === 'failed' ? 'Copy failed' : 'Copy'}
      </button>
      <pre>{children}</pre>
    </div>
  );
}

const components: Components = {
  pre: ({ children, node }) => <CodeBlock source={textOf(node as MdNode | undefined).replace(/\n$/, '')}>{children}</CodeBlock>,
  a: ({ children, href }) => (
    <a href={href} target="_blank" rel="noreferrer noopener">
      {children}
    </a>
  ),
};

/**
 * KaTeX's settings for TeX from a model: no trusted commands (links, classes, styles), no
 * console warnings for TeX that is not LaTeX-compatible (it still renders), and bounds on
 * what one formula may cost (macro expansions) and how large it may draw (em).
 */
const katexOptions = { trust: false, strict: 'ignore', maxExpand: 500, maxSize: 50 } as const;

const remarkPlugins: Options['remarkPlugins'] = [remarkGfm, remarkMath, dollarsAsText, htmlAsText];
// The order matters: sanitise the model's markup, then typeset the math (remark-math's
// `language-math` code elements survive the schema), then highlight the code blocks left.
const rehypePlugins: Options['rehypePlugins'] = [rehypeSanitize, [rehypeKatex, katexOptions], [rehypeHighlight, { detect: true }]];

export const Markdown = memo(function Markdown({ text }: { text: string }) {
  return (
    <div className="markdown" data-testid="markdown">
      <ReactMarkdown remarkPlugins={remarkPlugins} rehypePlugins={rehypePlugins} components={components}>
        {text}
      </ReactMarkdown>
    </div>
  );
});
