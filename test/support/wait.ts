// Polls a condition the server reaches on its own (a subscription registered, a row written), for
// tests that must not sleep a fixed time. Fails with a clear message when it never holds.
export async function waitUntil(check: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`waitUntil: the condition did not hold within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
