// compat/sse.ts under a client that reads slowly: the stream waits for each drain, and each wait
// leaves no listener behind (a long stream to a slow reader drains thousands of times).
import { createServer, request } from 'node:http';
import type { Response } from 'express';
import { describe, expect, it } from 'vitest';
import { sendSse } from '../compat/sse.js';

describe('an SSE stream to a slow reader', () => {
  it('waits for each drain without piling up listeners on the response', async () => {
    let most = 0;
    const server = createServer((_req, res) => {
      async function* events() {
        for (let i = 0; i < 400; i++) {
          most = Math.max(most, res.listenerCount('close'), res.listenerCount('error'));
          yield 'x'.repeat(64 * 1024);
        }
      }
      void sendSse(res as unknown as Response, events(), (e) => e, { stalledMs: 10_000 });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const port = (server.address() as { port: number }).port;
      const body = await new Promise<string>((resolve, reject) => {
        request(`http://127.0.0.1:${port}/`, (res) => {
          let text = '';
          res.setEncoding('utf8');
          // Reads a chunk, then pauses a moment: the server's writes back up again and again.
          res.on('data', (chunk: string) => {
            text += chunk;
            res.pause();
            setTimeout(() => res.resume(), 1);
          });
          res.on('end', () => resolve(text));
          res.on('error', reject);
        })
          .on('error', reject)
          .end();
      });
      expect(body.endsWith('data: [DONE]\n\n')).toBe(true);
      expect(most).toBeLessThanOrEqual(3);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});
