import { type FormEvent, useState } from 'react';
import { useMutation } from 'urql';
import { Field } from '../../components/Field';
import { graphql } from '../../gql';
import { SaveStatus } from './SaveStatus';

const ChangePasswordDoc = graphql(`
  mutation ChangePassword($currentPassword: String!, $newPassword: String!) {
    changePassword(currentPassword: $currentPassword, newPassword: $newPassword)
  }
`);

export function PasswordForm({ email }: { email: string }) {
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [state, change] = useMutation(ChangePasswordDoc);
  const [outcome, setOutcome] = useState<'saved' | 'failed' | null>(null);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const r = await change({ currentPassword: current, newPassword: next });
    setOutcome(r.error ? 'failed' : 'saved');
    if (!r.error) {
      setCurrent('');
      setNext('');
    }
  };
  return (
    <form className="card" onSubmit={submit} aria-labelledby="pw-title">
      <h2 id="pw-title">Password</h2>
      {/* For password managers (and Chrome's check): the account whose password this is. */}
      <input type="text" name="username" autoComplete="username" value={email} readOnly hidden />
      <Field
        label="Current password"
        type="password"
        autoComplete="current-password"
        required
        value={current}
        onChange={(e) => {
          setCurrent(e.target.value);
          setOutcome(null);
        }}
      />
      <Field
        label="New password"
        type="password"
        autoComplete="new-password"
        required
        minLength={10}
        value={next}
        onChange={(e) => {
          setNext(e.target.value);
          setOutcome(null);
        }}
        hint="At least 10 characters. Your other browsers are signed out."
      />
      <button type="submit" disabled={state.fetching}>
        Change password
      </button>
      <SaveStatus error={outcome === 'failed' ? state.error : null} saved={outcome === 'saved'} />
    </form>
  );
}
