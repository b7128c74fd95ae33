// A GraphQL subscription turned into Server-Sent Events: `data: <JSON>\n\n` per event and a final
// `data: [DONE]\n\n`. The first event is pulled before any byte is written, so errors met before
// the stream starts still get their HTTP status. For a chat stream that first event is the role
// chunk, which the inference service yields once the call is admitted and an upstream has accepted
// it (its response head), not after the first token: validation, 402, 429 and an upstream's 503
// with Retry-After keep their status, and a slow first token does not hold the head back. A stream
// that fails later ends with an event carrying the error body and no [DONE], so no client can take
// a cut stream for a finished one. A client that takes none of what was written for `stalledMs`
// (its socket and Node's buffer full) is disconnected, as if it had left: the call ends, billed for
// what was delivered, instead of holding the call (an in-process model's slot) for as long as the
// client keeps the connection open, past its hold.
import { once } from 'node:events';
import type { Response } from 'express';
import { errorResponse } from './errors.js';

export async function sendSse<T>(
  res: Response,
  events: AsyncGenerator<T>,
  toData: (event: T) => unknown | undefined,
  opts: { log?: (err: unknown) => void; headers?: Record<string, string>; stalledMs: number; onStalled?: () => void },
): Promise<void> {
  const first = await events.next(); // throws: the caller answers with a plain error response
  let gone = false;
  // The request's GraphQL context aborts the engine on close; ending the iterator frees the rest.
  res.once('close', () => {
    if (res.writableFinished) return;
    gone = true;
    void events.return(undefined);
  });
  res.writeHead(200, {
    ...opts.headers,
    'Content-Type': 'text/event-stream; charset=utf-8',
    'Cache-Control': 'no-cache',
    Connection: 'keep-alive',
    'X-Accel-Buffering': 'no',
  });
  const write = async (data: string) => {
    if (gone || res.write(`data: ${data}\n\n`)) return;
    const stalled = setTimeout(() => {
      opts.onStalled?.();
      res.destroy();
    }, opts.stalledMs);
    // The wait that loses the race is called off, its listeners removed: a slow reader drains
    // many times, and each wait left a 'close' and an 'error' listener behind.
    const done = new AbortController();
    const until = (event: string) => once(res, event, { signal: done.signal }).catch(() => {});
    try {
      await Promise.race([until('drain'), until('close')]);
    } finally {
      done.abort();
      clearTimeout(stalled);
    }
  };
  try {
    for (let next = first; !next.done; next = await events.next()) {
      const data = toData(next.value);
      if (data !== undefined) await write(JSON.stringify(data));
      if (gone) return;
    }
    await write('[DONE]');
  } catch (err) {
    if (!gone) await write(JSON.stringify(errorResponse(err, opts.log).body));
  } finally {
    if (!gone) res.end();
  }
}
