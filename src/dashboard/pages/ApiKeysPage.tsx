// API keys: create one (optionally expiring; shown once, with a copy button), the list (name,
// prefix and last four, created, last used, expiry, in UTC as the server counts them), and
// "Revoke" with a confirmation. On a phone the table's rows stack, each cell labelled, so status
// and Revoke are in view.
import { type FormEvent, useRef, useState } from 'react';
import { useMutation, useQuery } from 'urql';
import { Field } from '../components/Field';
import { NewKeyPanel } from '../components/NewKeyPanel';
import { Empty, ErrorMessage, Loading } from '../components/States';
import { graphql } from '../gql';
import { formatUtcDateTime } from '../lib/utc-time';

const KeysDoc = graphql(`
  query ApiKeys {
    viewer {
      id
      apiKeys {
        id
        name
        display
        createdAt
        lastUsedAt
        expiresAt
        revokedAt
      }
    }
  }
`);

const CreateKeyDoc = graphql(`
  mutation CreateMyApiKey($name: String, $expiresAt: DateTime) {
    createMyApiKey(name: $name, expiresAt: $expiresAt) {
      id
      apiKey
    }
  }
`);

const RevokeKeyDoc = graphql(`
  mutation RevokeMyApiKey($id: ID!) {
    revokeMyApiKey(id: $id) {
      id
      revokedAt
    }
  }
`);

/** In UTC, as the server counts an expiry day (a key stops at 00:00 UTC), and labelled so. */
const when = (d: string | null | undefined) => (d ? formatUtcDateTime(d) : 'Never');

/** Tomorrow (UTC), the first day an expiry may name: "2026-11-28". */
const tomorrowUtc = () => new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);

export default function ApiKeysPage() {
  const [{ data, fetching, error }, refetch] = useQuery({ query: KeysDoc });
  const [created, create] = useMutation(CreateKeyDoc);
  const [revoking, revoke] = useMutation(RevokeKeyDoc);
  const [asking, setAsking] = useState(false);
  const [name, setName] = useState('');
  const [expires, setExpires] = useState('');
  const [secret, setSecret] = useState<string | null>(null);
  const [confirm, setConfirm] = useState<string | null>(null);
  const createButton = useRef<HTMLButtonElement>(null);
  const keysTable = useRef<HTMLTableElement>(null);
  // Each key's Revoke button, for "Keep it" to give the focus back to.
  const revokeButtons = useRef(new Map<string, HTMLButtonElement>());
  // What the last revoke did, said in a live region (the row's buttons are gone with it).
  const [revoked, setRevoked] = useState('');
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    // A day, as the CLI's --expires-at reads it: the key stops at 00:00 UTC that day.
    const r = await create({ name: name.trim() || null, expiresAt: expires || null });
    if (r.data) {
      setSecret(r.data.createMyApiKey.apiKey);
      setAsking(false);
      setName('');
      setExpires('');
      refetch({ requestPolicy: 'network-only' });
    }
  };
  const keys = data?.viewer.apiKeys ?? [];
  /** "Keep it": the question goes, and the focus back to the Revoke button it replaced. */
  const keepKey = (id: string) => {
    setConfirm(null);
    requestAnimationFrame(() => revokeButtons.current.get(id)?.focus());
  };
  return (
    <>
      <h1>API keys</h1>
      <p>Keys call the API (/v1 and GraphQL) on behalf of your account. Keep them secret.</p>
      {secret ? (
        <NewKeyPanel
          apiKey={secret}
          onDone={() => {
            setSecret(null);
            // The panel and its button are gone: the keyboard goes on from "Create key".
            requestAnimationFrame(() => createButton.current?.focus());
          }}
        />
      ) : null}
      {asking ? (
        <form className="card narrow" onSubmit={submit} aria-label="New key">
          <Field
            label="Key name"
            placeholder="e.g. production"
            maxLength={255}
            value={name}
            onChange={(e) => setName(e.target.value)}
            autoFocus
          />
          <Field
            label="Expires on (optional)"
            type="date"
            min={tomorrowUtc()}
            value={expires}
            onChange={(e) => setExpires(e.target.value)}
            hint="The key stops working at 00:00 UTC on this day. Leave empty for a key that does not expire."
          />
          {created.error ? (
            <ErrorMessage
              error={created.error}
              title="Could not create the key"
              names={{ expires_at: 'the expiry date', expiresAt: 'the expiry date' }}
            />
          ) : null}
          <button type="submit" className="primary" disabled={created.fetching}>
            Create
          </button>{' '}
          <button
            type="button"
            onClick={() => {
              setAsking(false);
              // The form and its buttons are gone: the keyboard goes on from "Create key".
              requestAnimationFrame(() => createButton.current?.focus());
            }}
          >
            Cancel
          </button>
        </form>
      ) : (
        <button type="button" className="primary" onClick={() => setAsking(true)} ref={createButton}>
          Create key
        </button>
      )}
      {fetching && !data ? <Loading what="your keys" /> : null}
      {error ? <ErrorMessage error={error} onRetry={() => refetch({ requestPolicy: 'network-only' })} /> : null}
      {revoking.error ? <ErrorMessage error={revoking.error} title="Could not revoke" /> : null}
      <p role="status">{revoked}</p>
      {data && keys.length === 0 ? <Empty>No API keys yet: create one to call the API.</Empty> : null}
      {keys.length > 0 ? (
        <div className="table-wrap stack">
          <table ref={keysTable} tabIndex={-1}>
            <caption>Your API keys</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Key</th>
                <th scope="col">Created</th>
                <th scope="col">Last used</th>
                <th scope="col">Expires</th>
                <th scope="col">Status</th>
                <th scope="col">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {keys.map((k) => (
                <tr key={k.id}>
                  <td data-label="Name">{k.name ?? <span className="muted">(no name)</span>}</td>
                  <td data-label="Key">
                    <code>{k.display}</code>
                  </td>
                  <td data-label="Created">{when(k.createdAt)}</td>
                  <td data-label="Last used">{when(k.lastUsedAt)}</td>
                  <td data-label="Expires">{when(k.expiresAt)}</td>
                  <td data-label="Status">
                    {k.revokedAt ? 'Revoked' : k.expiresAt && new Date(k.expiresAt) < new Date() ? 'Expired' : 'Active'}
                  </td>
                  <td className="actions">
                    {k.revokedAt ? null : confirm === k.id ? (
                      // biome-ignore lint/a11y/useSemanticElements: an inline group of two buttons, not a form fieldset.
                      <span role="group" aria-label={`Confirm revoking ${k.name ?? k.display}`}>
                        Revoke {k.name ?? k.display}? Calls with it stop at once.{' '}
                        <button
                          type="button"
                          className="danger"
                          onClick={async () => {
                            const r = await revoke({ id: k.id });
                            setConfirm(null);
                            if (r.data) setRevoked(`Revoked ${k.name ?? k.display}: calls with it are refused from now on.`);
                            refetch({ requestPolicy: 'network-only' });
                            // The buttons are gone with the key's revoking: the keyboard goes on from the table.
                            requestAnimationFrame(() => keysTable.current?.focus());
                          }}
                        >
                          Yes, revoke
                        </button>{' '}
                        {/* The safe choice takes the focus the Revoke button had, so the keyboard keeps its place. */}
                        {/* biome-ignore lint/a11y/noAutofocus: the button that opened this group has just gone. */}
                        <button type="button" onClick={() => keepKey(k.id)} autoFocus>
                          Keep it
                        </button>
                      </span>
                    ) : (
                      <button
                        type="button"
                        ref={(el) => {
                          if (el) revokeButtons.current.set(k.id, el);
                          else revokeButtons.current.delete(k.id);
                        }}
                        onClick={() => setConfirm(k.id)}
                        aria-label={`Revoke ${k.name ?? k.display}`}
                      >
                        Revoke
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </>
  );
}
