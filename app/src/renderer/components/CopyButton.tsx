/** A Copy button that says "Copied" for a moment once the text is on the clipboard. */
import { useState } from 'react';
import { copyText } from '../lib/clipboard.js';

export function CopyButton({ text, label, testId }: { text: string; label: string; testId?: string }) {
  const [copied, setCopied] = useState(false);
  const copy = async (): Promise<void> => {
    setCopied(await copyText(text));
    setTimeout(() => setCopied(false), 1500);
  };
  return (
    <button className="btn small" onClick={() => void copy()} aria-label={label} data-testid={testId}>
      {copied ? 'Copied' : 'Copy'}
    </button>
  );
}
