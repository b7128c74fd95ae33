import { type FormEvent, useState } from 'react';
import { useMutation } from 'urql';
import { Field } from '../components/Field';
import { Link } from '../components/Link';
import { ErrorMessage } from '../components/States';
import { graphql } from '../gql';
import { reloadTo } from '../session';

const OperatorSignInDoc = graphql(`
  mutation SignInAsOperator($token: String!) {
    signInAsOperator(token: $token) {
      id
    }
  }
`);

export default function OperatorLoginPage() {
  const [{ fetching, error }, signIn] = useMutation(OperatorSignInDoc);
  const [token, setToken] = useState('');
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const r = await signIn({ token });
    if (r.data?.signInAsOperator) reloadTo('/operator');
  };
  return (
    <section className="card narrow" aria-labelledby="op-title">
      <h1 id="op-title">Operator sign-in</h1>
      <p className="muted">
        Exchange the server's ADMIN_TOKEN for an operator session. Accounts flagged admin sign in with their password instead.
      </p>
      <form onSubmit={submit}>
        <Field
          label="Operator token"
          type="password"
          autoComplete="off"
          required
          value={token}
          onChange={(e) => setToken(e.target.value)}
        />
        {error ? <ErrorMessage error={error} title="Could not sign in" /> : null}
        <button type="submit" className="primary" disabled={fetching}>
          Sign in as operator
        </button>
      </form>
      <p>
        <Link to="/login">Back to sign in</Link>
      </p>
    </section>
  );
}
