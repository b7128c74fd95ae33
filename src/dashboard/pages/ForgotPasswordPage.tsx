import { type FormEvent, useState } from 'react';
import { useMutation } from 'urql';
import { Field } from '../components/Field';
import { Link } from '../components/Link';
import { ErrorMessage } from '../components/States';
import { graphql } from '../gql';

const RequestResetDoc = graphql(`
  mutation RequestPasswordReset($email: String!) {
    requestPasswordReset(email: $email)
  }
`);

export default function ForgotPasswordPage() {
  const [{ fetching, error, data }, request] = useMutation(RequestResetDoc);
  const [email, setEmail] = useState('');
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void request({ email });
  };
  return (
    <section className="card narrow" aria-labelledby="forgot-title">
      <h1 id="forgot-title">Reset your password</h1>
      {data?.requestPasswordReset ? (
        <p role="status">If an account has this address, a link to choose a new password is on its way. It works once, for an hour.</p>
      ) : (
        <form onSubmit={submit}>
          <Field label="Email" type="email" autoComplete="email" required value={email} onChange={(e) => setEmail(e.target.value)} />
          {error ? <ErrorMessage error={error} title="Could not send the link" /> : null}
          <button type="submit" className="primary" disabled={fetching}>
            Send reset link
          </button>
        </form>
      )}
      <p>
        <Link to="/login">Back to sign in</Link>
      </p>
    </section>
  );
}
