// The frame of signed-in pages: a skip link, the navigation (a list of links, the current one
// marked), the account, and the "Sign out" button.
import type { ReactNode } from 'react';
import { useMutation } from 'urql';
import { graphql } from '../gql';
import { reloadTo, type SignedIn } from '../session';
import { Link } from './Link';

const SignOutDoc = graphql(`
  mutation SignOut {
    signOut
  }
`);

const ACCOUNT_LINKS: [string, string][] = [
  ['/', 'Overview'],
  ['/usage', 'Usage'],
  ['/transactions', 'Transactions'],
  ['/top-up', 'Top up'],
  ['/settings', 'Settings'],
  ['/api-keys', 'API keys'],
  ['/playground', 'Playground'],
  ['/notifications', 'Notifications'],
  ['/plan', 'Plan'],
  ['/models', 'Models'],
];

export function Layout({ session, children }: { session: SignedIn | null; children: ReactNode }) {
  const [, signOut] = useMutation(SignOutDoc);
  const links: [string, string][] = session?.account
    ? [...ACCOUNT_LINKS]
    : session
      ? [['/models', 'Models']]
      : [
          ['/models', 'Models'],
          ['/login', 'Sign in'],
        ];
  if (session?.operator) links.push(['/operator', 'Operator']);
  return (
    <div className="shell">
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="top">
        <span className="brand">tollgate</span>
        {session ? (
          <div className="who">
            <span>{session.account ? session.account.email : 'Operator'}</span>
            <button
              type="button"
              onClick={async () => {
                await signOut({});
                reloadTo('/login');
              }}
            >
              Sign out
            </button>
          </div>
        ) : null}
      </header>
      <nav aria-label="Main">
        <ul>
          {links.map(([to, name]) => (
            <li key={to}>
              <Link to={to}>{name}</Link>
            </li>
          ))}
        </ul>
      </nav>
      <main id="main" tabIndex={-1}>
        {children}
      </main>
    </div>
  );
}
