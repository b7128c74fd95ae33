// The app's shell: who is signed in, which page the path names, and the layout around it. Pages
// load on demand (one chunk each), so the first page needs only the shell and itself; a page whose
// code could not be loaded is loaded again on its next visit.
import { type ComponentType, type LazyExoticComponent, lazy, Suspense, useEffect } from 'react';
import { useQuery } from 'urql';
import { onSignedOut } from './client';
import { Layout } from './components/Layout';
import { PageErrorBoundary } from './components/PageErrorBoundary';
import { ErrorMessage, Loading } from './components/States';
import { graphql } from './gql';
import { loginPathFor, safeReturnPath } from './lib/return-to';
import { BASE, useRouter } from './router';
import { reloadTo, SessionContext } from './session';

const SessionQueryDoc = graphql(`
  query Session {
    session {
      id
      operator
      account {
        id
        email
        tier
      }
    }
    signupPolicy
  }
`);

/**
 * A page whose code loads on demand, imported again when a load failed. React.lazy keeps a failed
 * import for good: a page first opened while the server was out of reach stayed broken after it
 * came back, until a reload. A failed load is forgotten here, so the next visit to the page (a
 * fresh render of it) imports it again.
 */
function onDemand<P>(load: () => Promise<{ default: ComponentType<P> }>): () => LazyExoticComponent<ComponentType<P>> {
  const make = (): LazyExoticComponent<ComponentType<P>> =>
    lazy(() =>
      load().catch((error: unknown) => {
        page = make();
        throw error;
      }),
    );
  let page = make();
  return () => page;
}

const pages = {
  login: onDemand(() => import('./pages/LoginPage')),
  signup: onDemand(() => import('./pages/SignupPage')),
  forgot: onDemand(() => import('./pages/ForgotPasswordPage')),
  reset: onDemand(() => import('./pages/ResetPasswordPage')),
  operatorLogin: onDemand(() => import('./pages/OperatorLoginPage')),
  overview: onDemand(() => import('./pages/OverviewPage')),
  usage: onDemand(() => import('./pages/UsagePage')),
  transactions: onDemand(() => import('./pages/TransactionsPage')),
  topUp: onDemand(() => import('./pages/TopUpPage')),
  topUpReturn: onDemand(() => import('./pages/TopUpReturnPage')),
  settings: onDemand(() => import('./pages/SettingsPage')),
  keys: onDemand(() => import('./pages/ApiKeysPage')),
  playground: onDemand(() => import('./pages/PlaygroundPage')),
  notifications: onDemand(() => import('./pages/NotificationsPage')),
  plan: onDemand(() => import('./pages/PlanPage')),
  models: onDemand(() => import('./pages/ModelsPage')),
  operator: onDemand(() => import('./pages/OperatorPage')),
  notFound: onDemand(() => import('./pages/NotFoundPage')),
};

/** Pages anyone can see; the others need a signed-in person (or, for /operator, an operator). */
const PUBLIC: Record<string, keyof typeof pages> = {
  '/login': 'login',
  '/signup': 'signup',
  '/forgot-password': 'forgot',
  '/reset-password': 'reset',
  '/operator-login': 'operatorLogin',
  '/models': 'models',
};
const ACCOUNT: Record<string, keyof typeof pages> = {
  '/': 'overview',
  '/usage': 'usage',
  '/transactions': 'transactions',
  '/top-up': 'topUp',
  '/top-up/return': 'topUpReturn',
  '/settings': 'settings',
  '/api-keys': 'keys',
  '/playground': 'playground',
  '/notifications': 'notifications',
  '/plan': 'plan',
};

export function App() {
  const [{ data, fetching, error }] = useQuery({ query: SessionQueryDoc, requestPolicy: 'network-only' });
  const { path, search, navigate } = useRouter();
  const session = data?.session ?? null;
  const publicPage = PUBLIC[path];
  const accountPage = ACCOUNT[path];
  const needsSignIn = !fetching && !error && !session && !publicPage;
  const operatorHome = !fetching && session && !session.account && (accountPage !== undefined || path === '/login');
  const signedInOnAuthPage = !fetching && session?.account && (path === '/login' || path === '/signup');
  // Sign-in comes back to the page asked for (`?next=`, a path of this dashboard only).
  const next = safeReturnPath(search.get('next'));
  useEffect(() => {
    if (needsSignIn) navigate(loginPathFor(path, location.search), { replace: true });
    else if (operatorHome) navigate('/operator', { replace: true });
    else if (signedInOnAuthPage) navigate(next ?? '/', { replace: true });
  }, [needsSignIn, operatorHome, signedInOnAuthPage, navigate, path, next]);
  // The session is read once, at start: when the server later answers as if nobody were signed
  // in, the session has ended elsewhere, and the sign-in page says so (a full load, so the
  // WebSocket and the cache start afresh), then brings the person back to the page they were on.
  const signedIn = session !== null;
  useEffect(() => {
    if (!signedIn) return;
    const stop = onSignedOut(() => {
      stop();
      const at = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) || '/' : '/';
      reloadTo(loginPathFor(at, location.search, { session: 'ended' }));
    });
    return stop;
  }, [signedIn]);

  if (fetching && !data) return <Loading what="the dashboard" />;
  if (error)
    return (
      <main className="auth">
        <ErrorMessage error={error} title="The dashboard could not start" onRetry={() => location.reload()} retryLabel="Reload" />
      </main>
    );

  let key: keyof typeof pages = 'notFound';
  if (publicPage) key = publicPage;
  else if (path === '/operator' && session?.operator) key = 'operator';
  else if (accountPage && session?.account) key = accountPage;
  else if (!session) key = 'login';
  const Page = pages[key]();
  const bare = !session && publicPage !== 'models';
  const titles: Partial<Record<keyof typeof pages, string>> = {
    login: 'Sign in',
    signup: 'Sign up',
    overview: 'Overview',
    usage: 'Usage',
    transactions: 'Transactions',
    topUp: 'Top up',
    settings: 'Settings',
    keys: 'API keys',
    playground: 'Playground',
    notifications: 'Notifications',
    plan: 'Plan',
    models: 'Models',
    operator: 'Operator',
  };
  document.title = `${titles[key] ?? 'Dashboard'} · tollgate`;
  // Keyed by the path: another page from the navigation gets a fresh boundary.
  const content = (
    <PageErrorBoundary key={path}>
      <Suspense fallback={<Loading what="the page" />}>
        <Page signupPolicy={data?.signupPolicy ?? 'open'} />
      </Suspense>
    </PageErrorBoundary>
  );
  return (
    <SessionContext.Provider value={session}>
      {bare ? <main className="auth">{content}</main> : <Layout session={session}>{content}</Layout>}
    </SessionContext.Provider>
  );
}
