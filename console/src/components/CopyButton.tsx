import { useState } from 'react';

/** Copies `text`; says so in words (a live region), not only by a change of colour. */
export function CopyButton({ text, label }: { text: string; label: string }) {
  const [done, setDone] = useState<'copied' | 'failed' | null>(null);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setDone('copied');
    } catch {
      setDone('failed');
    }
    setTimeout(() => setDone(null), 2000);
  };
  return (
    <>
      <button type="button" className="small" aria-label={label} onClick={copy}>Copy</button>
      <span role="status" className="muted">{done === 'copied' ? ' Copied' : done === 'failed' ? ' Copy failed: select the text' : ''}</span>
    </>
  );
}
