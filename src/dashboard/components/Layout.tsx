// The frame of signed-in pages: a skip link, the navigation (a list of links, the current one
// marked), the account, and the "Sign out" button (which says so when signing out failed: the
// session is then still valid, and the person still signed in).
import { type ReactNode, useEffect, useRef, useState } from 'react';
import { type CombinedError, useMutation } from 'urql';
import { useRouter } from '../router';
import { graphql } from '../gql';
import { reloadTo, type SignedIn } from '../session';
import { Link } from './Link';
import { ErrorMessage } from './States';

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

/**
 * After moving to another page, focus goes to its heading, so that a screen reader says which page
 * it is and the keyboard starts from the page (not from the link that was clicked). Pages load on
 * demand: the heading is waited for, a second at most, then the main region takes the focus.
 */
function useFocusOnPageChange(path: string) {
  const shown = useRef(path);
  useEffect(() => {
    if (shown.current === path) return; // the first page: the browser's own focus stays
    shown.current = path;
    let tries = 0;
    const timer = setInterval(() => {
      const heading = document.querySelector<HTMLElement>('main h1');
      if (heading || ++tries > 20) {
        clearInterval(timer);
        const target = heading ?? document.getElementById('main');
        if (heading && !heading.hasAttribute('tabindex')) heading.setAttribute('tabindex', '-1');
        target?.focus();
      }
    }, 50);
    return () => clearInterval(timer);
  }, [path]);
}

export function Layout({ session, children }: { session: SignedIn | null; children: ReactNode }) {
  const [signingOut, signOut] = useMutation(SignOutDoc);
  const [signOutError, setSignOutError] = useState<CombinedError | string | null>(null);
  const doSignOut = async () => {
    setSignOutError(null);
    const r = await signOut({});
    if (r.error || r.data?.signOut !== true) setSignOutError(r.error ?? 'The server did not confirm it.');
    else reloadTo('/login');
  };
  const { path } = useRouter();
  useFocusOnPageChange(path);
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
            <button type="button" disabled={signingOut.fetching} onClick={doSignOut}>
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
        {signOutError ? (
          <ErrorMessage
            error={signOutError}
            title="Signing out failed: you are still signed in"
            onRetry={doSignOut}
            retryLabel="Sign out again"
          />
        ) : null}
        {children}
      </main>
    </div>
  );
}
