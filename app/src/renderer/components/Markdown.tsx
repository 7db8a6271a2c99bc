/**
 * An assistant message as markdown: GitHub-flavoured text through react-markdown, never
 * raw HTML from the model (HTML in a reply shows as the text it is, so a `<script>` stays
 * inert), sanitised (rehype-sanitize) and with code blocks highlighted (rehype-highlight)
 * and copyable.
 */
import { memo, useState, type ReactNode } from 'react';
import ReactMarkdown, { type Components } from 'react-markdown';
import rehypeHighlight from 'rehype-highlight';
import rehypeSanitize from 'rehype-sanitize';
import { copyText } from '../lib/clipboard.js';

interface MdNode {
  type: string;
  value?: string;
  children?: MdNode[];
}

/** remark plugin: HTML in the markdown becomes plain text (before rehype, so nothing drops it). */
function htmlAsText() {
  const walk = (node: MdNode): void => {
    if (node.type === 'html') node.type = 'text';
    node.children?.forEach(walk);
  };
  return (tree: MdNode) => walk(tree);
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

export const Markdown = memo(function Markdown({ text }: { text: string }) {
  return (
    <div className="markdown" data-testid="markdown">
      <ReactMarkdown remarkPlugins={[htmlAsText]} rehypePlugins={[rehypeSanitize, [rehypeHighlight, { detect: true }]]} components={components}>
        {text}
      </ReactMarkdown>
    </div>
  );
});
