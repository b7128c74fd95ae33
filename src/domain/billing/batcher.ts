// Batches of work per key (an account): what callers add while a batch for the same key is being
// written waits and goes in the next one, so under load many holds or settlements of one wallet
// share one statement and one commit (as SQLite's group commit shares a commit, ./sql.ts), and
// alone a call waits only for the end of the current event-loop turn.
export type Outcome<R> = { ok: true; value: R } | { ok: false; error: unknown };

interface Waiting<T, R> {
  item: T;
  resolve: (value: R) => void;
  reject: (error: unknown) => void;
}

export class KeyedBatcher<T, R> {
  private readonly queues = new Map<string, Waiting<T, R>[]>();

  /** `write` gets a key's waiting items (at most `max`, in the order added) and settles each. */
  constructor(
    private readonly write: (key: string, items: T[]) => Promise<Outcome<R>[]>,
    private readonly max = 200,
  ) {}

  add(key: string, item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      const queue = this.queues.get(key);
      if (queue) {
        queue.push({ item, resolve, reject });
        return;
      }
      const fresh: Waiting<T, R>[] = [{ item, resolve, reject }];
      this.queues.set(key, fresh);
      setImmediate(() => void this.drain(key, fresh));
    });
  }

  /** Items waiting or being written (tests). */
  get pending(): number {
    let n = 0;
    for (const queue of this.queues.values()) n += queue.length;
    return n;
  }

  /** A batch that fails is written again one item at a time, so one bad item fails alone. */
  private async writeOrSplit(key: string, items: T[]): Promise<Outcome<R>[]> {
    try {
      return await this.write(key, items);
    } catch (error) {
      if (items.length === 1) return [{ ok: false, error }];
      const outcomes: Outcome<R>[] = [];
      for (const item of items) outcomes.push(...(await this.writeOrSplit(key, [item])));
      return outcomes;
    }
  }

  private async drain(key: string, queue: Waiting<T, R>[]): Promise<void> {
    while (queue.length > 0) {
      const batch = queue.splice(0, this.max);
      const outcomes = await this.writeOrSplit(
        key,
        batch.map((w) => w.item),
      );
      for (const [i, w] of batch.entries()) {
        const outcome = outcomes[i] ?? { ok: false, error: new Error('batch write returned no outcome') };
        if (outcome.ok) w.resolve(outcome.value);
        else w.reject(outcome.error);
      }
    }
    this.queues.delete(key);
  }
}
