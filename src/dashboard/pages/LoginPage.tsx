import { type FormEvent, useState } from 'react';
import { useMutation } from 'urql';
import { Field } from '../components/Field';
import { Link } from '../components/Link';
import { ErrorMessage } from '../components/States';
import { graphql } from '../gql';
import { safeReturnPath } from '../lib/return-to';
import { useRouter } from '../router';
import { reloadTo } from '../session';
import type { PageProps } from './props';

const SignInDoc = graphql(`
  mutation SignIn($email: String!, $password: String!) {
    signIn(email: $email, password: $password) {
      id
    }
  }
`);

export default function LoginPage({ signupPolicy }: PageProps) {
  const [{ fetching, error }, signIn] = useMutation(SignInDoc);
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const { search } = useRouter();
  // Sent here by the app when the session ended (signed out elsewhere, a password reset, expiry).
  const ended = search.get('session') === 'ended';
  // The page they were on, or had asked for: a path of this dashboard only, never another site.
  const next = safeReturnPath(search.get('next'));
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const r = await signIn({ email, password });
    if (r.data?.signIn) reloadTo(next ?? '/');
  };
  return (
    <section className="card narrow" aria-labelledby="login-title">
      <h1 id="login-title">Sign in to tollgate</h1>
      {ended ? (
        <p className="notice" role="status">
          Your session ended: sign in again.
        </p>
      ) : null}
      <form onSubmit={submit}>
        <Field label="Email" type="email" autoComplete="username" required value={email} onChange={(e) => setEmail(e.target.value)} />
        <Field
          label="Password"
          type="password"
          autoComplete="current-password"
          required
          value={password}
          onChange={(e) => setPassword(e.target.value)}
        />
        {error ? <ErrorMessage error={error} title="Could not sign in" /> : null}
        <button type="submit" className="primary" disabled={fetching}>
          Sign in
        </button>
      </form>
      <p>
        <Link to="/forgot-password">Forgot your password?</Link>
      </p>
      {signupPolicy !== 'closed' ? (
        <p>
          No account yet? <Link to="/signup">Sign up</Link>
        </p>
      ) : null}
      <p className="muted">
        <Link to="/operator-login">Operator sign-in</Link> · <Link to="/models">Models</Link>
      </p>
    </section>
  );
}
