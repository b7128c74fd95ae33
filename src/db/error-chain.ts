// Errors reach the doors wrapped: in GraphQL's `originalError`, in `cause`, in MikroORM's
// DriverException (which copies the wrapped error's code and message). The database's tests of an
// error look through that chain, a bounded number of links deep.

/** A link of the chain, as far as the tests read it. */
export interface ErrorLink {
  code?: unknown;
  message?: unknown;
}

/** Whether any error of the chain (the error itself, then what it wraps, 6 deep at most) passes `test`. */
export function someInChain(error: unknown, test: (link: ErrorLink) => boolean): boolean {
  let e: unknown = error;
  for (let depth = 0; depth < 6 && e && typeof e === 'object'; depth++) {
    if (test(e as ErrorLink)) return true;
    e = (e as { originalError?: unknown; cause?: unknown }).originalError ?? (e as { cause?: unknown }).cause;
  }
  return false;
}
