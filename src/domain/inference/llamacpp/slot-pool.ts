// Per-model admission for in-process inference: `parallel` slots (contexts or sequences) and a
// bounded FIFO queue in front of them. A call beyond the queue's depth, or one that waits longer
// than the queue allows, is refused with 503 model_overloaded and a Retry-After, rather than piling
// up behind a CPU that cannot serve it.
import { DomainError } from '../../errors.js';

export interface QueueLimits {
  /** Calls that may wait for a slot; 0 refuses whenever every slot is busy. */
  maxDepth: number;
  /** How long a call may wait for a slot before it is refused. */
  maxWaitMs: number;
}

interface Waiter<T> {
  resolve(slot: T): void;
  reject(err: unknown): void;
  cleanup(): void;
}

export interface Lease<T> {
  slot: T;
  /** Gives the slot to the next waiter (or back to the pool); safe to call more than once. */
  release(): void;
}

export class SlotPool<T> {
  private readonly free: T[];
  private readonly waiters: Waiter<T>[] = [];

  constructor(
    slots: T[],
    private readonly limits: QueueLimits,
    private readonly modelId: string,
  ) {
    this.free = [...slots];
  }

  get queued(): number {
    return this.waiters.length;
  }

  get idle(): number {
    return this.free.length;
  }

  private overloaded(why: string): DomainError {
    return new DomainError('model_overloaded', `The model '${this.modelId}' is busy (${why}); retry shortly.`, {
      retryAfter: Math.max(1, Math.ceil(this.limits.maxWaitMs / 1000)),
    });
  }

  async acquire(signal: AbortSignal): Promise<Lease<T>> {
    if (signal.aborted) throw signal.reason;
    const ready = this.free.pop();
    if (ready !== undefined) return this.lease(ready);
    if (this.waiters.length >= this.limits.maxDepth) throw this.overloaded(`${this.waiters.length} requests already waiting`);
    const slot = await new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        remove();
        reject(this.overloaded(`no slot within ${this.limits.maxWaitMs} ms`));
      }, this.limits.maxWaitMs);
      const onAbort = () => {
        remove();
        reject(signal.reason);
      };
      const waiter: Waiter<T> = {
        resolve,
        reject,
        cleanup: () => {
          clearTimeout(timer);
          signal.removeEventListener('abort', onAbort);
        },
      };
      const remove = () => {
        waiter.cleanup();
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) this.waiters.splice(i, 1);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
    });
    return this.lease(slot);
  }

  private lease(slot: T): Lease<T> {
    let released = false;
    return {
      slot,
      release: () => {
        if (released) return;
        released = true;
        const next = this.waiters.shift();
        if (next) {
          next.cleanup();
          next.resolve(slot);
        } else {
          this.free.push(slot);
        }
      },
    };
  }

  /** Refuses every waiting call (the model is closing). */
  rejectWaiting(err: unknown): void {
    for (const w of this.waiters.splice(0)) {
      w.cleanup();
      w.reject(err);
    }
  }
}
