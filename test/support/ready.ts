// Waits for a tollgate started as a child process to answer /readyz with 200.
export async function waitReady(url: string, attempts = 600): Promise<void> {
  // Generous: on a busy 2-core machine the process compiles its sources (and may load models) first.
  for (let i = 0; i < attempts; i++) {
    const ok = await fetch(`${url}/readyz`).then((r) => r.status === 200, () => false);
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('server did not become ready');
}
