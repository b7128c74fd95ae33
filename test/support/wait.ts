// Polls a condition the server reaches on its own (a subscription registered, a row written), for
// tests that must not sleep a fixed time. Fails with a clear message when it never holds.
export async function waitUntil(check: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`waitUntil: the condition did not hold within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** The first truthy value `fn` gives, polled every 20 ms; fails when none comes within `timeoutMs`. */
export async function until<T>(
  fn: () => Promise<T | null | undefined | false> | T | null | undefined | false,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`until: no value within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
