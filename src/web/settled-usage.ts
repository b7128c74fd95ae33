// What the metered calls of an HTTP response were settled at (model and tokens), kept on the
// response for its access line.
import type { ServerResponse } from 'node:http';
import type { Usage } from '../domain/inference/engine.js';

/** What the calls of a response were settled at, for its access line: the model and tokens. */
export interface SettledUsage {
  model: string;
  promptTokens: number;
  completionTokens: number;
}

const SETTLED = Symbol('tollgate.settled');
type WithSettled = ServerResponse & { [SETTLED]?: SettledUsage };

/** Keeps the model and tokens of the response's metered call (the sum, should there be several). */
export function settledOn(res: ServerResponse): (model: string, usage: Usage) => void {
  return (model, usage) => {
    const r = res as WithSettled;
    const before = r[SETTLED];
    r[SETTLED] = {
      model: before && before.model !== model ? `${before.model},${model}` : model,
      promptTokens: (before?.promptTokens ?? 0) + usage.promptTokens,
      completionTokens: (before?.completionTokens ?? 0) + usage.completionTokens,
    };
  };
}

export function settledUsage(res: ServerResponse): SettledUsage | undefined {
  return (res as WithSettled)[SETTLED];
}
