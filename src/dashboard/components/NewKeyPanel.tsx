import { useState } from 'react';

/** The secret of a key just created: shown this once, with a copy button. */
export function NewKeyPanel({ apiKey, onDone }: { apiKey: string; onDone: () => void }) {
  const [copied, setCopied] = useState(false);
  return (
    <div className="card notice" role="region" aria-labelledby="new-key-title">
      <h2 id="new-key-title">Your new API key</h2>
      <p>Copy it now: it is not shown again.</p>
      <p>
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
