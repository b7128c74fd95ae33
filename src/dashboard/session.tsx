// Who is signed in, read once at start (Query.session) and shared with the pages.
import { createContext, useContext } from 'react';
import type { SessionQuery } from './gql/graphql';

export type SignedIn = NonNullable<SessionQuery['session']>;

export const SessionContext = createContext<SignedIn | null>(null);

export function useSession(): SignedIn {
  const s = useContext(SessionContext);
  if (!s) throw new Error('useSession outside a signed-in page');
  return s;
}

/** After signing in or out: a full load, so the WebSocket and the cache start afresh with the new cookie. */
export function reloadTo(path: string): void {
  location.assign(`/dashboard${path}`);
}
