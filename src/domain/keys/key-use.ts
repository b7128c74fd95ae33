// When each API key was last used, for the dashboard's keys page: after a call is settled, its
// key's api_keys row gets the time, at most once per key and minute from each server (the first
// call of a key, or the first after a quiet minute, writes at once), in a short transaction of its
// own after the call's, never on the call's path. A write that fails is logged and tried again
// with the key's next call; a server that stops loses at most the last minute's precision.

/** How often a key's row is written, at most, from one server. */
export const KEY_USE_INTERVAL_MS = 60_000;
/** Keys remembered before the memory of writes is cleared (each then writes once more). */
const MAX_REMEMBERED = 100_000;

export class KeyUse {
  /** When this server last wrote each key's row (epoch ms). */
  private readonly written = new Map<string, number>();

  constructor(
    private readonly write: (keyId: string, at: Date) => Promise<void>,
    private readonly onError: (err: unknown, keyId: string) => void,
    private readonly intervalMs = KEY_USE_INTERVAL_MS,
  ) {}

  /** A call of `keyId` (null: a dashboard session's, no key) was settled at `at`. */
  touch(keyId: string | null, at: Date): void {
    if (keyId === null) return;
    const t = at.getTime();
    const last = this.written.get(keyId);
    if (last !== undefined && t - last < this.intervalMs && t >= last) return;
    if (this.written.size >= MAX_REMEMBERED) this.written.clear();
    this.written.set(keyId, t);
    this.write(keyId, at).catch((err: unknown) => {
      this.written.delete(keyId);
      this.onError(err, keyId);
    });
  }
}

/** The write: newer times only (another server, or a clock behind, never moves it back). */
export const KEY_USE_UPDATE = 'update api_keys set last_used_at = ? where id = ? and (last_used_at is null or last_used_at < ?)';
