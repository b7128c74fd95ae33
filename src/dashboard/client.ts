// The dashboard's GraphQL client: urql over HTTP for queries and mutations (with the session
// cookie, same origin, and the header Yoga's CSRF check asks for), graphql-ws for subscriptions
// (the cookie goes with the WebSocket upgrade; the server checks its Origin).
import { createClient as createWsClient, type Client as WsClient } from 'graphql-ws';
import { cacheExchange, Client, fetchExchange, mapExchange, subscriptionExchange } from 'urql';

export function wsUrl(): string {
  return `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/graphql`;
}

/**
 * The codes of an answer given as if nobody were signed in: the session ended since the page
 * loaded (signed out or revoked from another browser, a password reset, its expiry). The
 * dashboard never sends an API key, so `invalid_api_key` ("No API key provided") means the same;
 * `admin_required` does for an operator's session.
 */
const SIGNED_OUT_CODES = new Set(['session_required', 'invalid_api_key', 'admin_required']);

type SignedOutListener = (code: string) => void;
const signedOutListeners = new Set<SignedOutListener>();

/** Calls `listener` with the code of each answer refused as signed out; returns the unsubscribe. */
export function onSignedOut(listener: SignedOutListener): () => void {
  signedOutListeners.add(listener);
  return () => signedOutListeners.delete(listener);
}

function noticeSignedOut(errors: readonly { extensions?: Record<string, unknown> }[] | undefined): void {
  const code = errors?.map((e) => e.extensions?.code).find((c): c is string => typeof c === 'string' && SIGNED_OUT_CODES.has(c));
  if (code) for (const listener of signedOutListeners) listener(code);
}

export const ws: WsClient = createWsClient({
  url: wsUrl(),
  lazy: true,
  // A server restarting refuses connections for a while, which graphql-ws's default (retry only
  // after a close, not a refused connection) would give up on: keep trying, with its growing,
  // randomised waits, so live updates resume on their own once the server is back.
  retryAttempts: 20,
  shouldRetry: () => true,
  // Every operation's answer over the socket, the playground's stream included.
  on: {
    message: (m) => {
      if (m.type === 'next') noticeSignedOut(m.payload.errors);
      else if (m.type === 'error') noticeSignedOut(m.payload);
    },
  },
});

export const client = new Client({
  url: '/graphql',
  requestPolicy: 'cache-and-network',
  fetchOptions: () => ({ credentials: 'same-origin', headers: { 'x-graphql-yoga-csrf': '1' } }),
  exchanges: [
    cacheExchange,
    mapExchange({ onError: (error) => noticeSignedOut(error.graphQLErrors) }),
    fetchExchange,
    subscriptionExchange({
      forwardSubscription: (request) => ({
        subscribe: (sink) => ({ unsubscribe: ws.subscribe({ ...request, query: request.query ?? '' }, sink) }),
      }),
    }),
  ],
});
