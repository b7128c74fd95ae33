import { type FormEvent, useState } from 'react';
import { useMutation } from 'urql';
import { Field } from '../../components/Field';
import { graphql } from '../../gql';
import { SaveStatus } from './SaveStatus';

const ChangeEmailDoc = graphql(`
  mutation ChangeEmail($email: String!, $password: String!) {
    changeEmail(email: $email, password: $password) {
      id
      email
    }
  }
`);

/**
 * The sign-in address: the current one shown, the new one typed (nothing filled in, so a stray
 * "Change email" changes nothing), the password to confirm. The server e-mails a notice to the
 * address it had.
 */
export function EmailForm({ email, onSaved }: { email: string; onSaved: () => void }) {
  const [value, setValue] = useState('');
  const [password, setPassword] = useState('');
  const [state, change] = useMutation(ChangeEmailDoc);
  const [outcome, setOutcome] = useState<{ saved: true; from: string } | { saved: false } | null>(null);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const r = await change({ email: value, password });
    setOutcome(r.error ? { saved: false } : { saved: true, from: email });
    if (!r.error) {
      setValue('');
      setPassword('');
      onSaved();
    }
  };
  const edited = () => setOutcome(null);
  return (
    <form className="card" onSubmit={submit} aria-labelledby="em-title">
      <h2 id="em-title">E-mail address</h2>
      <p>
        You sign in as <strong>{email}</strong>.
      </p>
      {/* For password managers (and Chrome's check): the account this password belongs to. */}
      <input type="text" name="username" autoComplete="username" value={email} readOnly hidden />
      <Field
        label="New email"
        type="email"
        autoComplete="off"
        required
        value={value}
        onChange={(e) => {
          setValue(e.target.value);
          edited();
        }}
      />
      <Field
        label="Password to confirm"
        type="password"
        autoComplete="current-password"
        required
        value={password}
        onChange={(e) => {
          setPassword(e.target.value);
          edited();
        }}
        hint="A notice goes to your current address."
      />
      <button type="submit" disabled={state.fetching}>
        Change email
      </button>
      {outcome?.saved ? (
        <p role="status">Saved. A notice was sent to {outcome.from}.</p>
      ) : (
        <SaveStatus error={outcome && !outcome.saved ? state.error : null} saved={false} />
      )}
    </form>
  );
}
