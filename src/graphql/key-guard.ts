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

/** What a guarded subscription's source is: its items, or (once started) a promise of them. */
export type OpenSource<T> = (
  signal: AbortSignal,
  principal: Principal,
) => AsyncIterable<StreamItem<T>> | Promise<AsyncIterable<StreamItem<T>>>;

/**
 * The items of the source that `open` starts (with a signal that aborts when the operation ends,
 * the client goes away or the key stops being valid), until one of those happens. A failure to
 * authenticate or to open the source, or the key's end, is yielded once as an error item; then the
 * iterator is done. With `errorsAsItems`, so is the source's own failure (otherwise next() throws it).
 */
export function untilKeyInvalid<T>(
  ctx: GraphQLContext,
  open: OpenSource<T>,
  opts: { errorsAsItems?: boolean } = {},
): AsyncIterableIterator<StreamItem<T>> {
  return new KeyGuarded(ctx, open, opts.errorsAsItems ?? false);
}

type Result<T> = IteratorResult<StreamItem<T>>;

export const CONCURRENT_NEXT = 'a guarded stream takes one next() at a time: await each item before asking for the next';

/**
 * untilKeyInvalid's iterator. A stream passes every item through it, so an item costs one promise
 * (the one next() answers, settled by the source's item or by the key's end, whichever comes
 * first) and no closures: the callbacks are made once per stream.
 */
class KeyGuarded<T> implements AsyncIterableIterator<StreamItem<T>> {
  private readonly controller = new AbortController();
  private source: AsyncIterator<StreamItem<T>> | undefined;
  private unwatch: (() => void) | undefined;
  private ending: { streamError: unknown } | undefined;
  private done = false;
  private started: Promise<void> | undefined;
  private ready = false;
  /** The next() waiting for the source's item: the key's end settles it too. */
  private wake: ((result: Result<T>) => void) | undefined;
  private fail: ((err: unknown) => void) | undefined;
  private readonly onItem: (result: Result<T>) => void;
  private readonly onError: (err: unknown) => void;
  private readonly end: (error: unknown) => void;
  private readonly waitItem: (resolve: (result: Result<T>) => void, reject: (err: unknown) => void) => void;

  constructor(
    private readonly ctx: GraphQLContext,
    private readonly open: OpenSource<T>,
    private readonly errorsAsItems: boolean,
  ) {
    // Completed (or its socket closed) while its context was being made: nothing is started.
    if (ctx.signal.aborted) this.done = true;
    else ctx.signal.addEventListener('abort', this, { once: true });
    this.onItem = (result) => {
      const wake = this.wake;
      this.wake = this.fail = undefined;
      // An item that comes after the key's end finds no one waiting: it is dropped.
      if (!wake) return;
      if (result.done) wake(this.finish());
      else wake(result);
    };
    this.onError = (err) => {
      const { wake, fail } = this;
      this.wake = this.fail = undefined;
      // So is an error after the key's end.
      if (!this.errorsAsItems) fail?.(err);
      else if (wake) {
        this.finish();
        wake({ value: { streamError: err }, done: false });
      }
    };
    this.end = (error) => this.ended(error);
    this.waitItem = (resolve, reject) => {
      this.wake = resolve;
      this.fail = reject;
      this.source!.next().then(this.onItem, this.onError);
    };
  }

  /** The client went away (the context's signal). */
  handleEvent(): void {
    this.controller.abort(this.ctx.signal.reason);
  }

  private finish(): Result<T> {
    if (!this.done) {
      this.done = true;
      this.unwatch?.();
      this.ctx.signal.removeEventListener('abort', this);
      this.controller.abort();
      // A source still producing its pending item ends on the abort; its return() then runs.
      void Promise.resolve(this.source?.return?.()).catch(() => {});
    }
    return { value: undefined, done: true };
  }

  /** The key's end (or a failure to start): the error item goes out next, at once if next() is waiting. */
  private ended(error: unknown): void {
    if (this.done || this.ending) return;
    this.ending = { streamError: error };
    this.controller.abort(error);
    const wake = this.wake;
    this.wake = this.fail = undefined;
    if (wake) wake(this.errorItem());
  }

  private errorItem(): Result<T> {
    const error = this.ending!;
    this.finish();
    return { value: error, done: false };
  }

  private async start(): Promise<void> {
    const { ctx } = this;
    try {
      const principal = await ctx.principal();
      // A key's operations end when it is revoked or expires; a signed-in person's when the
      // session is signed out, revoked (from another device) or expires.
      if (principal.keyId) this.unwatch = ctx.services.keyWatch.watch({ keyId: principal.keyId }, this.end);
      else if (ctx.session) this.unwatch = ctx.services.keyWatch.watch({ sessionId: ctx.session.id }, this.end);
      const source = this.open(this.controller.signal, principal);
      this.source = (source instanceof Promise ? await source : source)[Symbol.asyncIterator]();
    } catch (err) {
      this.ended(err);
    }
    this.ready = true;
  }

  next(): Promise<Result<T>> {
    if (this.done) return Promise.resolve({ value: undefined, done: true });
    // One next() at a time (every consumer here awaits each item): a second one while the first
    // waits is refused rather than left to take the first one's item.
    if (this.wake || (this.started && !this.ready)) return Promise.reject(new Error(CONCURRENT_NEXT));
    if (!this.ready) return this.firstNext();
    if (this.ending) return Promise.resolve(this.errorItem());
    return new Promise(this.waitItem);
  }

  private async firstNext(): Promise<Result<T>> {
    await (this.started ??= this.start());
    if (this.done) return { value: undefined, done: true };
    if (this.ending) return this.errorItem();
    return new Promise(this.waitItem);
  }

  async return(): Promise<Result<T>> {
    return this.finish();
  }

  async throw(err?: unknown): Promise<Result<T>> {
    this.finish();
    throw err;
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<StreamItem<T>> {
    return this;
  }
}
