// The dashboard's GraphQL client: urql over HTTP for queries and mutations (with the session
// cookie, same origin, and the header Yoga's CSRF check asks for), graphql-ws for subscriptions
// (the cookie goes with the WebSocket upgrade; the server checks its Origin).
import { createClient as createWsClient, type Client as WsClient } from 'graphql-ws';
import { cacheExchange, Client, fetchExchange, subscriptionExchange } from 'urql';

export function wsUrl(): string {
  return `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/graphql`;
}

export const ws: WsClient = createWsClient({ url: wsUrl(), lazy: true, retryAttempts: 20 });

export const client = new Client({
  url: '/graphql',
  requestPolicy: 'cache-and-network',
  fetchOptions: () => ({ credentials: 'same-origin', headers: { 'x-graphql-yoga-csrf': '1' } }),
  exchanges: [
    cacheExchange,
    fetchExchange,
    subscriptionExchange({
      forwardSubscription: (request) => ({
        subscribe: (sink) => ({ unsubscribe: ws.subscribe({ ...request, query: request.query ?? '' }, sink) }),
      }),
    }),
  ],
});
