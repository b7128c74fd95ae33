import { useEffect, useRef, useState } from 'react';
import { useHoldNavigation } from '../router';

/** Selects the key's text, so that Ctrl+C (⌘C) or the browser's menu copies it. */
function selectText(el: HTMLElement | null): void {
  const selection = el ? getSelection() : null;
  if (!el || !selection) return;
  selection.removeAllRanges();
  const range = document.createRange();
  range.selectNodeContents(el);
  selection.addRange(range);
}

export const NOT_COPIED_WARNING = 'You have not copied the new API key, and it is not shown again. Close it anyway?';

/**
 * The secret of a key just created: shown this once, with a copy button. It says "Copied" only when
 * the clipboard took it; when the browser refused (no permission, an insecure page), it says so and
 * selects the key to be copied by hand. Closing it, or leaving the page, before the key was copied
 * asks first (the same question, whether by Done, a link, Back or Forward; the browser's own when
 * closing or reloading the tab).
 */
export function NewKeyPanel({ apiKey, onDone }: { apiKey: string; onDone: () => void }) {
  const [copy, setCopy] = useState<'not_yet' | 'copied' | 'failed'>('not_yet');
  const keyText = useRef<HTMLElement>(null);
  const heading = useRef<HTMLHeadingElement>(null);
  const copied = copy === 'copied';
  // Copied by hand (the selection, Ctrl+C): the key is safe somewhere too.
  useEffect(() => {
    const onCopy = () => {
      const selected = getSelection()?.toString() ?? '';
      if (selected.includes(apiKey)) setCopy('copied');
    };
    document.addEventListener('copy', onCopy);
    return () => document.removeEventListener('copy', onCopy);
  }, [apiKey]);
  // Shown in place of the form that created the key: the focus, left on nothing as that form went,
  // moves to the panel's heading, so that a screen reader announces the new key and the keyboard
  // goes on from there (Copy is next).
  useEffect(() => heading.current?.focus(), []);
  // Leaving before the key was copied (a link, Back or Forward, closing or reloading the tab) asks
  // first, as Done does.
  useHoldNavigation(copied ? null : NOT_COPIED_WARNING);
  return (
    // biome-ignore lint/a11y/useSemanticElements: a labelled region the end-to-end tests find by role; kept as written by the dashboard.
    <div className="card notice" role="region" aria-labelledby="new-key-title">
      <h2 id="new-key-title" tabIndex={-1} ref={heading}>
        Your new API key
      </h2>
      <p>Copy it now: it is not shown again.</p>
      <p>
        {/* biome-ignore lint/a11y/useAriaPropsSupportedByRole: the key is found by this name in the end-to-end tests. */}
        <code className="secret" aria-label="New API key" ref={keyText}>
          {apiKey}
        </code>
      </p>
      <button
        type="button"
        onClick={async () => {
          try {
            await navigator.clipboard.writeText(apiKey);
            setCopy('copied');
          } catch {
            setCopy('failed');
            selectText(keyText.current);
          }
        }}
      >
        Copy
      </button>{' '}
      <button
        type="button"
        onClick={() => {
          if (copied || confirm(NOT_COPIED_WARNING)) onDone();
        }}
      >
        Done
      </button>
      <span role="status">
        {copy === 'copied'
          ? ' Copied to the clipboard.'
          : copy === 'failed'
            ? ' The browser did not let the dashboard copy it: the key is selected, press Ctrl+C (⌘C on a Mac) to copy it.'
            : ''}
      </span>
    </div>
  );
}
