import { type FormEvent, useState } from 'react';
import { useMutation } from 'urql';
import { Field } from '../components/Field';
import { Link } from '../components/Link';
import { ErrorMessage } from '../components/States';
import { graphql } from '../gql';
import { errorCode } from '../lib/error-text';
import { useRouter } from '../router';
import { reloadTo } from '../session';

const ResetPasswordDoc = graphql(`
  mutation ResetPassword($token: String!, $password: String!) {
    resetPassword(token: $token, password: $password) {
      id
    }
  }
`);

export default function ResetPasswordPage() {
  const { search } = useRouter();
  const token = search.get('token') ?? '';
  const [{ fetching, error }, reset] = useMutation(ResetPasswordDoc);
  const [password, setPassword] = useState('');
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const r = await reset({ token, password });
    if (r.data?.resetPassword) reloadTo('/');
  };
  return (
    <section className="card narrow" aria-labelledby="reset-title">
      <h1 id="reset-title">Choose a new password</h1>
      {!token ? (
        <p role="alert">
          This page needs the link from the e-mail. <Link to="/forgot-password">Ask for a new one</Link>.
        </p>
      ) : (
        <form onSubmit={submit}>
          <Field
            label="New password"
            type="password"
            autoComplete="new-password"
            required
            minLength={10}
            hint="At least 10 characters."
            value={password}
            onChange={(e) => setPassword(e.target.value)}
          />
          {error ? (
            <ErrorMessage error={error} title="Could not set the password">
              {errorCode(error) === 'invalid_token' ? <Link to="/forgot-password">Ask for a new link</Link> : null}
            </ErrorMessage>
          ) : null}
          <button type="submit" className="primary" disabled={fetching}>
            Set password
          </button>
        </form>
      )}
    </section>
  );
}
