// What the metered calls of an HTTP response were settled at (model and tokens), kept on the
// response for its access line; and whether a call admitted is still to be settled, so that the
// line of a response whose client left first (a 499) waits for its settlement.
import type { ServerResponse } from 'node:http';
import type { Usage } from '../domain/inference/engine.js';

/** What the calls of a response were settled at, for its access line: the model and tokens. */
export interface SettledUsage {
  model: string;
  promptTokens: number;
  completionTokens: number;
}

/** The longest an access line waits for a settlement (one that never comes is logged without it). */
const SETTLEMENT_WAIT_MS = 60_000;

interface Tracked {
  settled?: SettledUsage;
  /** Calls admitted and not yet settled. */
  pending: number;
  waiting?: () => void;
}

const TRACKED = Symbol('tollgate.settled');
type WithTracked = ServerResponse & { [TRACKED]?: Tracked };

function tracked(res: ServerResponse): Tracked {
  const r = res as WithTracked;
  r[TRACKED] ??= { pending: 0 };
  return r[TRACKED];
}

/** Counts a metered call of the response admitted: its settlement is to come. */
export function admittedOn(res: ServerResponse): () => void {
  return () => {
    tracked(res).pending++;
  };
}

/** Keeps the model and tokens of the response's metered call (the sum, should there be several). */
export function settledOn(res: ServerResponse): (model: string, usage: Usage) => void {
  return (model, usage) => {
    const t = tracked(res);
    const before = t.settled;
    t.settled = {
      model: before && before.model !== model ? `${before.model},${model}` : model,
      promptTokens: (before?.promptTokens ?? 0) + usage.promptTokens,
      completionTokens: (before?.completionTokens ?? 0) + usage.completionTokens,
    };
    t.pending = Math.max(0, t.pending - 1);
    if (t.pending === 0 && t.waiting) t.waiting();
  };
}

/** Calls `fn` with what the response's calls were settled at: now, or once the calls admitted are settled. */
export function whenSettled(res: ServerResponse, fn: (settled: SettledUsage | undefined) => void): void {
  const t = (res as WithTracked)[TRACKED];
  if (!t || t.pending === 0) {
    fn(t?.settled);
    return;
  }
  let done = false;
  const once = () => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    t.waiting = undefined;
    fn(t.settled);
  };
  const timer = setTimeout(once, SETTLEMENT_WAIT_MS);
  timer.unref();
  t.waiting = once;
}
