import { useState } from 'react';
import { useMutation } from 'urql';
import { ErrorMessage } from '../../components/States';
import { graphql } from '../../gql';
import { errorCode } from '../../lib/error-text';
import { describeUserAgent } from '../../lib/user-agent';
import { formatUtcDateTime } from '../../lib/utc-time';

const RevokeSessionDoc = graphql(`
  mutation RevokeSession($id: ID!) {
    revokeSession(id: $id)
  }
`);

/**
 * The account's signed-in browsers, told apart by browser, when each signed in and when it was
 * last seen, this one marked; ending another asks first.
 */
export function SessionsList({
  sessions,
  onChanged,
}: {
  sessions: { id: string; current: boolean; userAgent?: string | null; createdAt: string; lastSeenAt: string }[];
  onChanged: () => void;
}) {
  const [state, revoke] = useMutation(RevokeSessionDoc);
  const [confirm, setConfirm] = useState<string | null>(null);
  // This browser first, then the most recently signed in.
  const sorted = [...sessions].sort((a, b) => Number(b.current) - Number(a.current) || b.createdAt.localeCompare(a.createdAt));
  return (
    <section className="card" aria-labelledby="ss-title">
      <h2 id="ss-title">Signed-in browsers</h2>
      {/* not_found: the session had already ended (signed out, or ended from another tab); the list is read again. */}
      {state.error && errorCode(state.error) !== 'not_found' ? (
        <ErrorMessage error={state.error} title="Could not end the session" />
      ) : null}
      <ul className="plain sessions">
        {sorted.map((s) => {
          const name = describeUserAgent(s.userAgent);
          const label = `${name}, signed in ${formatUtcDateTime(s.createdAt)}`;
          return (
            <li key={s.id}>
              <span title={s.userAgent ?? undefined}>{name}</span>
              {s.current ? <strong> (this browser)</strong> : null}
              <br />
              <span className="muted">
                Signed in {formatUtcDateTime(s.createdAt)} · last seen {formatUtcDateTime(s.lastSeenAt)}
              </span>
              {s.current ? null : confirm === s.id ? (
                // biome-ignore lint/a11y/useSemanticElements: an inline group of two buttons, not a form fieldset.
                <div role="group" aria-label={`Confirm ending ${label}`}>
                  End this session? That browser is signed out at once.{' '}
                  <button
                    type="button"
                    className="danger"
                    disabled={state.fetching}
                    onClick={async () => {
                      await revoke({ id: s.id });
                      setConfirm(null);
                      onChanged();
                    }}
                  >
                    Yes, end it
                  </button>{' '}
                  {/* biome-ignore lint/a11y/noAutofocus: the button that opened this group has just gone; the safe choice takes its focus. */}
                  <button type="button" onClick={() => setConfirm(null)} autoFocus>
                    Keep it
                  </button>
                </div>
              ) : (
                <div>
                  <button type="button" onClick={() => setConfirm(s.id)} aria-label={`End session: ${label}`}>
                    End session
                  </button>
                </div>
              )}
            </li>
          );
        })}
      </ul>
    </section>
  );
}
