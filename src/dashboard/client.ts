// The dashboard's GraphQL client: urql over HTTP for queries and mutations (with the session
// cookie, same origin, and the header Yoga's CSRF check asks for), graphql-ws for subscriptions
// (the cookie goes with the WebSocket upgrade; the server checks its Origin).
import {
  type Client as WsClient,
  createClient as createWsClient,
  type FormattedExecutionResult,
  type Message,
  type Sink,
  type SubscribePayload,
} from 'graphql-ws';
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

/** Every operation's answer over a socket: a refusal as signed out is noticed wherever it comes from. */
const noticeSignedOutOnSocket = (m: Message) => {
  if (m.type === 'next') noticeSignedOut(m.payload.errors);
  else if (m.type === 'error') noticeSignedOut(m.payload);
};

/**
 * The live feeds' socket (balance, notifications). graphql-ws subscribes every active operation
 * again when it reconnects, which suits a feed (it resumes) and nothing that costs money: the
 * playground's stream has a socket of its own (`subscribeOnce`).
 */
export const ws: WsClient = createWsClient({
  url: wsUrl(),
  lazy: true,
  // A server restarting refuses connections for a while, which graphql-ws's default (retry only
  // after a close, not a refused connection) would give up on: keep trying, with its growing,
  // randomised waits, so live updates resume on their own once the server is back.
  retryAttempts: 20,
  shouldRetry: () => true,
  on: { message: noticeSignedOutOnSocket },
});

/** Why an operation run with `subscribeOnce` ended without its answer's end: its socket broke. */
export class ConnectionLost extends Error {
  constructor(readonly connected: boolean) {
    super(
      connected
        ? 'The connection to the server was lost before the answer was complete. The prompt was not sent again: send it again once the server is back if you want a full answer.'
        : 'The server could not be reached: the prompt was not sent.',
    );
    this.name = 'ConnectionLost';
  }
}

/**
 * Runs a subscription that must never be sent twice (the playground's chat stream: each Subscribe
 * is a paid call to the model) on a WebSocket of its own that never reconnects. A connection that
 * breaks (a server restart, a proxy, the network) ends it with `ConnectionLost`; graphql-ws's
 * retries would otherwise subscribe it again, and bill the prompt again. Returns the unsubscribe.
 */
export function subscribeOnce<Data>(payload: SubscribePayload, sink: Sink<FormattedExecutionResult<Data>>): () => void {
  let ended = false;
  let connected = false;
  let unsubscribe = () => {};
  const end = () => {
    ended = true;
    unsubscribe();
    // The socket closes once its one operation is released; dispose stops anything left.
    void socket.dispose();
  };
  const socket = createWsClient({
    url: wsUrl(),
    lazy: true,
    retryAttempts: 0,
    shouldRetry: () => false,
    on: {
      message: noticeSignedOutOnSocket,
      connected: () => {
        connected = true;
      },
      // graphql-ws reconnects even without retries after a "normal" close (1000) while an
      // operation is active: whatever closed the socket, the operation ends here, unsent again.
      closed: () => {
        if (ended) return;
        end();
        sink.error(new ConnectionLost(connected));
      },
    },
  });
  unsubscribe = socket.subscribe<Data, Record<string, unknown>>(payload, {
    next: (value) => {
      if (!ended) sink.next(value);
    },
    error: (error) => {
      if (ended) return;
      end();
      // A refused or broken connection (an Event, a CloseEvent): said in words, not as an object.
      sink.error(Array.isArray(error) || error instanceof Error ? error : new ConnectionLost(connected));
    },
    complete: () => {
      if (ended) return;
      end();
      sink.complete();
    },
  });
  return () => {
    if (!ended) end();
  };
}

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
