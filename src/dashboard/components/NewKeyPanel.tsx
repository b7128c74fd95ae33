import { useState } from 'react';

/** The secret of a key just created: shown this once, with a copy button. */
export function NewKeyPanel({ apiKey, onDone }: { apiKey: string; onDone: () => void }) {
  const [copied, setCopied] = useState(false);
  return (
    // biome-ignore lint/a11y/useSemanticElements: a labelled region the end-to-end tests find by role; kept as written by the dashboard.
    <div className="card notice" role="region" aria-labelledby="new-key-title">
      <h2 id="new-key-title">Your new API key</h2>
      <p>Copy it now: it is not shown again.</p>
      <p>
        {/* biome-ignore lint/a11y/useAriaPropsSupportedByRole: the key is found by this name in the end-to-end tests. */}
        <code className="secret" aria-label="New API key">
          {apiKey}
        </code>
      </p>
      <button
        type="button"
        onClick={async () => {
          await navigator.clipboard.writeText(apiKey).catch(() => {});
          setCopied(true);
        }}
      >
        Copy
      </button>{' '}
      <button type="button" onClick={onDone}>
        Done
      </button>
      <span role="status">{copied ? ' Copied to the clipboard.' : ''}</span>
    </div>
  );
}
