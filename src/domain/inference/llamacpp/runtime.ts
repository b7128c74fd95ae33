// The one llama.cpp runtime of the process: node-llama-cpp's prebuilt CPU build, loaded once and
// shared by every in-process model. Nothing is compiled or downloaded (`build: 'never'`).
// llama.cpp's own log lines go to our logger; the last error line is kept so a failed load can say
// why (node-llama-cpp only throws "Failed to load model").
import { getLlama, LlamaLogLevel, type Llama } from 'node-llama-cpp';

export interface RuntimeLogger {
  debug(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
}

let llama: Promise<Llama> | undefined;
let logger: RuntimeLogger | undefined;
let lastError: string | undefined;

/** Routes llama.cpp's log lines to `next` from now on (the last logger set wins: one runtime per process). */
export function setRuntimeLogger(next: RuntimeLogger): void {
  logger = next;
}

/** The shared runtime, loaded on first use (about 0.7 s). */
export function getRuntime(): Promise<Llama> {
  llama ??= getLlama({
    gpu: false,
    build: 'never',
    logLevel: LlamaLogLevel.warn,
    logger: (level, message) => {
      const text = message.trim();
      if (!text) return;
      if (level === LlamaLogLevel.error || level === LlamaLogLevel.fatal) lastError = text;
      if (level === LlamaLogLevel.warn || level === LlamaLogLevel.error || level === LlamaLogLevel.fatal)
        logger?.warn({ llamacpp: text }, 'llama.cpp');
      else logger?.debug({ llamacpp: text }, 'llama.cpp');
    },
  }).catch((err) => {
    llama = undefined;
    throw err;
  });
  return llama;
}

/** The last error line llama.cpp logged since the previous call (and forgets it). */
export function takeLastRuntimeError(): string | undefined {
  const e = lastError;
  lastError = undefined;
  return e;
}
