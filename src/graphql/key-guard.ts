// Subscriptions bound to their key: an open subscription or stream ends with `invalid_api_key`
// when its key is revoked or expires (the key watch of src/domain/accounts/key-watch.ts notices
// within about a second). Errors travel as items ({streamError}), which the field's resolver
// throws: graphql-ws then ends this one operation with a GraphQL error instead of closing the
// whole socket. A hand-written iterator, not an async generator: a generator waiting on its
// source could not be stopped by return() (it waits for a yield) and would keep its source open.
import { DomainError } from '../domain/errors.js';
import type { GraphQLContext, Principal } from './context.js';

/** What a guarded subscription yields: an item of its source, or the error that ends it. */
export type StreamItem<T> = T | { streamError: unknown };

export function isStreamError<T>(item: StreamItem<T>): item is { streamError: unknown } {
  return typeof item === 'object' && item !== null && 'streamError' in item;
}

/** The resolver's side: an item as it is, an error item thrown (ending this operation with it). */
export function unwrapStreamItem<T>(item: StreamItem<T>): T {
  if (!isStreamError(item)) return item;
  throw item.streamError instanceof Error ? item.streamError : new DomainError('internal_error', 'The stream failed.');
}

/**
 * The items of the source that `open` starts (with a signal that aborts when the operation ends,
 * the client goes away or the key stops being valid), until one of those happens. A failure to
 * authenticate, or the key's end, is yielded once as an error item; then the iterator is done.
 */
export function untilKeyInvalid<T>(
  ctx: GraphQLContext,
  open: (signal: AbortSignal, principal: Principal) => AsyncIterable<StreamItem<T>>,
): AsyncIterableIterator<StreamItem<T>> {
  const controller = new AbortController();
  const onClientGone = () => controller.abort(ctx.signal.reason);
  ctx.signal.addEventListener('abort', onClientGone, { once: true });
  let source: AsyncIterator<StreamItem<T>> | undefined;
  let unwatch: (() => void) | undefined;
  let ending: { streamError: unknown } | undefined;
  let done = false;
  let wakeOnEnd: ((error: { streamError: unknown }) => void) | undefined;
  const ended = new Promise<{ streamError: unknown }>((resolve) => (wakeOnEnd = resolve));

  const finish = (): IteratorResult<StreamItem<T>> => {
    if (!done) {
      done = true;
      unwatch?.();
      ctx.signal.removeEventListener('abort', onClientGone);
      controller.abort();
      // A source still producing its pending item ends on the abort; its return() then runs.
      void Promise.resolve(source?.return?.()).catch(() => {});
    }
    return { value: undefined, done: true };
  };
  const end = (error: unknown) => {
    if (done || ending) return;
    ending = { streamError: error };
    controller.abort(error);
    wakeOnEnd!(ending);
  };

  const start = async () => {
    try {
      const principal = await ctx.principal();
      // A key's operations end when it is revoked or expires; a signed-in person's when the
      // session is signed out, revoked (from another device) or expires.
      if (principal.keyId) unwatch = ctx.services.keyWatch.watch({ keyId: principal.keyId }, end);
      else if (ctx.session) unwatch = ctx.services.keyWatch.watch({ sessionId: ctx.session.id }, end);
      source = open(controller.signal, principal)[Symbol.asyncIterator]();
    } catch (err) {
      end(err);
    }
  };
  let started: Promise<void> | undefined;

  const iterator: AsyncIterableIterator<StreamItem<T>> = {
    async next() {
      if (done) return { value: undefined, done: true };
      await (started ??= start());
      if (!ending) {
        const pending = source!.next();
        // The item a source produces after the key's end is dropped; so is its error.
        pending.catch(() => {});
        const next = await Promise.race([pending, ended.then((e) => ({ value: e, done: false as const, ending: true }))]);
        // The key's end aborts the source too, which may then end first: the error still goes out.
        if (!ending) {
          if (next.done) return finish();
          return next as IteratorResult<StreamItem<T>>;
        }
      }
      const error = ending!;
      finish();
      return { value: error, done: false };
    },
    async return() {
      return finish();
    },
    async throw(err?: unknown) {
      finish();
      throw err;
    },
    [Symbol.asyncIterator]() {
      return iterator;
    },
  };
  return iterator;
}
