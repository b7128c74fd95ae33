// One GraphQL subscription over graphql-ws, run to its end: every event it sent, and the error it
// ended with (if any).
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';

export function subscribeAll(
  serverUrl: string,
  query: string,
  variables: Record<string, unknown>,
  apiKey?: string,
): Promise<{ events: any[]; error?: unknown }> {
  const client = createClient({
    url: `${serverUrl.replace('http', 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: apiKey ? { authorization: `Bearer ${apiKey}` } : {},
    retryAttempts: 0,
  });
  const events: any[] = [];
  return new Promise((resolve) => {
    client.subscribe(
      { query, variables },
      {
        next: (v) => events.push(v),
        error: (error) => {
          void client.dispose();
          resolve({ events, error });
        },
        complete: () => {
          void client.dispose();
          resolve({ events });
        },
      },
    );
  });
}
