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

export function EmailForm({ email, onSaved }: { email: string; onSaved: () => void }) {
  const [value, setValue] = useState(email);
  const [password, setPassword] = useState('');
  const [state, change] = useMutation(ChangeEmailDoc);
  const [saved, setSaved] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const r = await change({ email: value, password });
    setSaved(!r.error);
    if (!r.error) {
      setPassword('');
      onSaved();
    }
  };
  return (
    <form className="card" onSubmit={submit} aria-labelledby="em-title">
      <h2 id="em-title">E-mail address</h2>
      <Field label="New email" type="email" autoComplete="email" required value={value} onChange={(e) => setValue(e.target.value)} />
      <Field
        label="Password to confirm"
        type="password"
        autoComplete="current-password"
        required
        value={password}
        onChange={(e) => setPassword(e.target.value)}
      />
      <button type="submit" disabled={state.fetching}>
        Change email
      </button>
      <SaveStatus error={state.error} saved={saved} />
    </form>
  );
}
