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

/**
 * How many promise steps `settleFirst` waits: more than the chain from a placement's answer to the
 * next admission batch's placement takes when its wallet row is cached (./admission.ts), about a
 * dozen. Only promise callbacks run meanwhile (no I/O, no timers), so it costs microseconds; what
 * takes longer (a fresh read of the row) goes in a later batch.
 */
const FOLLOW_UP_STEPS = 20;

export class KeyedBatcher<T, R> {
  private readonly queues = new Map<string, Waiting<T, R>[]>();

  /**
   * `write` gets a key's waiting items (at most `max`, in the order added) and settles each.
   * `settleFirst`: after a write, let the promise callbacks its results set off run before taking
   * the next batch, so that what they add at once joins it (on PostgreSQL, an account's next
   * admission batch, planned on the row the write returned, placing its holds beside the
   * settlements that waited: one statement instead of two).
   */
  constructor(
    private readonly write: (key: string, items: T[]) => Promise<Outcome<R>[]>,
    private readonly opts: { max?: number; settleFirst?: boolean } = {},
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
    for (let first = true; queue.length > 0; first = false) {
      if (!first && this.opts.settleFirst) for (let step = 0; step < FOLLOW_UP_STEPS; step++) await null;
      const batch = queue.splice(0, this.opts.max ?? 200);
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
