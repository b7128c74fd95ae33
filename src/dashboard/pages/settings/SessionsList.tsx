import { describeUserAgent } from '../../lib/user-agent';
import { useMutation } from 'urql';
import { ErrorMessage } from '../../components/States';
import { graphql } from '../../gql';

const RevokeSessionDoc = graphql(`
  mutation RevokeSession($id: ID!) {
    revokeSession(id: $id)
  }
`);

export function SessionsList({
  sessions,
  onChanged,
}: {
  sessions: { id: string; current: boolean; userAgent?: string | null; lastSeenAt: string }[];
  onChanged: () => void;
}) {
  const [state, revoke] = useMutation(RevokeSessionDoc);
  return (
    <section className="card" aria-labelledby="ss-title">
      <h2 id="ss-title">Signed-in browsers</h2>
      {state.error ? <ErrorMessage error={state.error} /> : null}
      <ul className="plain">
        {sessions.map((s) => (
          <li key={s.id}>
            {s.current ? <strong>This browser</strong> : <span title={s.userAgent ?? undefined}>{describeUserAgent(s.userAgent)}</span>}{' '}
            <span className="muted">last seen {new Date(s.lastSeenAt).toLocaleString()}</span>{' '}
            {s.current ? null : (
              <button
                type="button"
                onClick={async () => {
                  await revoke({ id: s.id });
                  onChanged();
                }}
              >
                End session
              </button>
            )}
          </li>
        ))}
      </ul>
    </section>
  );
}
