// A client that sends its request slowly holds a connection for server.request_timeout_ms at most
// (server.headers_timeout_ms for the headers), then gets 408 request_timeout; a stream that lasts
// longer than that is not cut, the timeouts bound receiving the request only.
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfigText } from '../src/config.js';
import { catalogYaml, startTestServer, type TestServer } from './support/harness.js';

/**
 * Writes `head`, then `drip` every 200 ms, `drips` times, then `tail`, on a connection of its own;
 * answers what the server wrote, and whether it closed the connection before the client was done.
 */
function slowRequest(
  s: TestServer,
  o: { head: string; drip: string; drips: number; tail: string },
): Promise<{ answer: string; closedEarly: boolean }> {
  const { port } = new URL(s.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1');
    let answer = '';
    let done = false;
    let timer: NodeJS.Timeout | undefined;
    socket.on('data', (c) => (answer += c));
    socket.on('error', () => {}); // a write after the server closed: the close below tells
    socket.on('close', () => {
      clearInterval(timer);
      resolve({ answer, closedEarly: !done });
    });
    socket.on('connect', () => {
      socket.write(o.head);
      let sent = 0;
      timer = setInterval(() => {
        if (socket.destroyed) return;
        if (sent++ < o.drips) return void socket.write(o.drip);
        clearInterval(timer);
        done = true;
        socket.end(o.tail);
      }, 200);
    });
    socket.setTimeout(60_000, () => reject(new Error('no answer')));
  });
}

const status = (answer: string) => /^HTTP\/1\.1 (\d+)/.exec(answer)?.[1];
const code = (answer: string) => (JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as { error: { code: string } }).error.code;

/** A POST /graphql whose chunked body comes a byte every 200 ms for 10 s. */
const slowBody = (s: TestServer) =>
  slowRequest(s, {
    head: 'POST /graphql HTTP/1.1\r\nHost: tollgate\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n',
    drip: '1\r\n \r\n',
    drips: 50,
    tail: '1\r\n}\r\n0\r\n\r\n',
  });

describe('slow requests', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ yaml: (u) => `server: { request_timeout_ms: 1000, headers_timeout_ms: 1000 }\n${catalogYaml(u)}` });
  });
  afterAll(async () => s?.close());

  it('answers a body sent a byte at a time with 408 request_timeout once its time is up, and closes the connection', async () => {
    const { answer, closedEarly } = await slowBody(s);
    expect(status(answer)).toBe('408');
    expect(code(answer)).toBe('request_timeout');
    expect(closedEarly).toBe(true);
  });

  it('answers headers sent a byte at a time the same way', async () => {
    const { answer, closedEarly } = await slowRequest(s, {
      head: 'GET /healthz HTTP/1.1\r\nHost: tollgate\r\n',
      drip: 'x',
      drips: 50,
      tail: ': 1\r\n\r\n',
    });
    expect(status(answer)).toBe('408');
    expect(code(answer)).toBe('request_timeout');
    expect(closedEarly).toBe(true);
  });

  it('does not cut a stream that lasts longer than the request timeout', async () => {
    let release!: () => void;
    s.upstream.setFault({ gate: new Promise<void>((resolve) => (release = resolve)) });
    try {
      const { apiKey } = await s.account();
      const stream = fetch(`${s.v1}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'chat-test', stream: true, messages: [{ role: 'user', content: 'hello there' }] }),
      });
      // Another client's slow request, started after the stream's, refused: the stream's
      // connection is now older than the request timeout, and the server has looked at it since.
      expect(status((await slowBody(s)).answer)).toBe('408');
      release();
      const res = await stream;
      expect(res.status).toBe(200);
      const text = await res.text();
      expect(text).toContain('"content"');
      expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
    } finally {
      release?.();
      s.upstream.setFault(null);
    }
  });
});

describe('the settings', () => {
  it('default to 30 s for a request and 20 s for its headers, and refuse headers given longer than the request', () => {
    expect(parseConfigText('', 'c.yaml').server).toMatchObject({ request_timeout_ms: 30_000, headers_timeout_ms: 20_000 });
    expect(() => parseConfigText('server: { request_timeout_ms: 5000 }\n', 'c.yaml')).toThrow(
      'c.yaml: server.headers_timeout_ms (20000) must be at most server.request_timeout_ms (5000)',
    );
  });
});
