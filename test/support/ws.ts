// GraphQL over WebSocket for tests: a graphql-ws client with an API key, and one operation's
// results collected until it ends (its error, if any, returned beside them rather than thrown).
import { type Client, createClient } from 'graphql-ws';
import WebSocket from 'ws';

/** A client of `${baseUrl}/graphql` sending `key` in connectionParams (none without a key). */
export function wsClient(baseUrl: string, key: string | null, opts: { lazy?: boolean } = {}): Client {
  return createClient({
    url: `${baseUrl.replace('http', 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: key ? { authorization: `Bearer ${key}` } : {},
    retryAttempts: 0,
    lazy: opts.lazy ?? true,
  });
}

/** Runs one operation on `client` and collects what it gets until it ends. */
export function operation(
  client: Client,
  query: string,
  variables: Record<string, unknown> = {},
  onNext?: (v: any) => void,
): Promise<{ events: any[]; error?: any }> {
  const events: any[] = [];
  return new Promise((resolve) => {
    client.subscribe(
      { query, variables },
      {
        next: (v) => {
          events.push(v);
          onNext?.(v);
        },
        error: (error) => resolve({ events, error }),
        complete: () => resolve({ events }),
      },
    );
  });
}

/** One subscription run to its end on a client of its own: every event it sent, and the error it ended with (if any). */
export async function subscribeAll(
  baseUrl: string,
  query: string,
  variables: Record<string, unknown>,
  apiKey?: string,
): Promise<{ events: any[]; error?: unknown }> {
  const client = wsClient(baseUrl, apiKey ?? null);
  try {
    return await operation(client, query, variables);
  } finally {
    await client.dispose();
  }
}
