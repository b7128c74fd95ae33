import { type FormEvent, useState } from 'react';
import { useMutation } from 'urql';
import { Field } from '../components/Field';
import { Link } from '../components/Link';
import { ErrorMessage } from '../components/States';
import { graphql } from '../gql';
import { errorCode } from '../lib/error-text';
import { reloadTo } from '../session';
import type { PageProps } from './props';

const SignUpDoc = graphql(`
  mutation SignUp($email: String!, $password: String!, $inviteCode: String) {
    signUp(email: $email, password: $password, inviteCode: $inviteCode) {
      id
    }
  }
`);

export default function SignupPage({ signupPolicy }: PageProps) {
  const [{ fetching, error }, signUp] = useMutation(SignUpDoc);
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [inviteCode, setInviteCode] = useState('');
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const r = await signUp({ email, password, inviteCode: signupPolicy === 'invite' ? inviteCode : null });
    if (r.data?.signUp) reloadTo('/');
  };
  return (
    <section className="card narrow" aria-labelledby="signup-title">
      <h1 id="signup-title">Create your tollgate account</h1>
      {signupPolicy === 'closed' ? (
        <p role="alert">Sign-up is closed on this server: ask its operator for an account.</p>
      ) : (
        <form onSubmit={submit}>
          <Field label="Email" type="email" autoComplete="email" required value={email} onChange={(e) => setEmail(e.target.value)} />
          <Field
            label="Password"
            type="password"
            autoComplete="new-password"
            required
            minLength={10}
            hint="At least 10 characters."
            value={password}
            onChange={(e) => setPassword(e.target.value)}
          />
          {signupPolicy === 'invite' ? (
            <Field label="Invitation code" required value={inviteCode} onChange={(e) => setInviteCode(e.target.value)} />
          ) : null}
          {error ? (
            <ErrorMessage error={error} title="Could not sign up">
              {errorCode(error) === 'email_taken' ? (
                <>
                  Is it yours? <Link to="/login">Sign in</Link> or <Link to="/forgot-password">reset the password</Link>.
                </>
              ) : null}
            </ErrorMessage>
          ) : null}
          <p className="muted">New accounts start on the free tier.</p>
          <button type="submit" className="primary" disabled={fetching}>
            Sign up
          </button>
        </form>
      )}
      <p>
        Already have an account? <Link to="/login">Sign in</Link>
      </p>
    </section>
  );
}
