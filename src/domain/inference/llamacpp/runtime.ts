// The one llama.cpp runtime of the process, loaded once and shared by every in-process model:
// node-llama-cpp's prebuilt build for the GPU the operator chose (`llamacpp.gpu`): `auto` (the
// default) takes the prebuilt CUDA or Vulkan build when the machine has that GPU and the CPU build
// otherwise; `cuda` or `vulkan` insist on it; `false` is the CPU build. Nothing is ever compiled or
// downloaded (`build: 'never'`, `skipDownload`): a build that cannot run here is an error.
// llama.cpp's own log lines go to our logger; the last error line is kept so a failed load can say
// why (node-llama-cpp only throws "Failed to load model").
import { getLlama, getLlamaGpuTypes, LlamaLogLevel, type Llama } from 'node-llama-cpp';
import { ConfigError } from '../../errors.js';

export interface RuntimeLogger {
  debug(obj: object, msg?: string): void;
  info?(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
}

/** `llamacpp.gpu`: which build of llama.cpp runs the in-process models. */
export type GpuSetting = 'auto' | 'cuda' | 'vulkan' | false;
/** Where a model's layers run: llama.cpp's backend. */
export type Backend = 'cpu' | 'cuda' | 'vulkan' | 'metal';

let llama: Promise<Llama> | undefined;
let logger: RuntimeLogger | undefined;
let lastError: string | undefined;
let gpuSetting: GpuSetting = 'auto';
/** Embedding and rerank contexts being made (see quietOverflowWhile). */
let encoderContexts = 0;
const TRAIN_OVERFLOW = /n_ctx_seq \(\d+\) > n_ctx_train/;

/**
 * Runs `make` (the making of embedding or rerank contexts) with llama.cpp's warning that a context
 * is longer than the GGUF's context_length logged at debug: those contexts are one token longer
 * than max_tokens (node-llama-cpp reads inputs shorter than the context), which may equal the
 * context_length, and llama.cpp pads the size further; no input reaches past max_tokens, so the
 * warning would only alarm an operator at every start.
 */
export async function quietOverflowWhile<T>(make: () => Promise<T>): Promise<T> {
  encoderContexts++;
  try {
    return await make();
  } finally {
    encoderContexts--;
  }
}

/** Routes llama.cpp's log lines to `next` from now on (the last logger set wins: one runtime per process). */
export function setRuntimeLogger(next: RuntimeLogger): void {
  logger = next;
}

/** Chooses the build the runtime loads; only before it is loaded (one runtime per process). */
export function setRuntimeGpu(setting: GpuSetting): void {
  if (llama && setting !== gpuSetting)
    logger?.warn({ gpu: setting, loaded: gpuSetting }, 'llama.cpp runtime already loaded: llamacpp.gpu stays as it was');
  else gpuSetting = setting;
}

const NAMES: Record<Backend, string> = { cpu: 'CPU', cuda: 'CUDA', vulkan: 'Vulkan', metal: 'Metal' };

export const backendOf = (runtime: Llama): Backend => (runtime.gpu === false ? 'cpu' : runtime.gpu);

/** The shared runtime, loaded on first use (the CPU build: about 0.7 s). */
export function getRuntime(): Promise<Llama> {
  const setting = gpuSetting;
  llama ??= getLlama({
    gpu: setting,
    build: 'never',
    skipDownload: true,
    progressLogs: false,
    logLevel: LlamaLogLevel.warn,
    logger: (level, message) => {
      const text = message.trim();
      if (!text) return;
      if (level === LlamaLogLevel.error || level === LlamaLogLevel.fatal) lastError = text;
      const quiet = level === LlamaLogLevel.warn && encoderContexts > 0 && TRAIN_OVERFLOW.test(text);
      if (!quiet && (level === LlamaLogLevel.warn || level === LlamaLogLevel.error || level === LlamaLogLevel.fatal))
        logger?.warn({ llamacpp: text }, 'llama.cpp');
      else logger?.debug({ llamacpp: text }, 'llama.cpp');
    },
  }).then(
    (runtime) => {
      const backend = backendOf(runtime);
      logger?.info?.(
        { gpu: setting, backend },
        `llama.cpp runtime: ${NAMES[backend]} build${setting === 'auto' ? ` (llamacpp.gpu: auto${backend === 'cpu' ? ': no CUDA or Vulkan GPU found' : ''})` : ''}`,
      );
      return runtime;
    },
    async (err) => {
      llama = undefined;
      if (setting === false || setting === 'auto') throw err;
      throw await unavailableGpu(setting, err);
    },
  );
  return llama;
}

/** The error for an explicit `llamacpp.gpu` whose build cannot run on this machine. */
async function unavailableGpu(setting: 'cuda' | 'vulkan', cause: unknown): Promise<ConfigError> {
  const supported = await getLlamaGpuTypes('supported').catch(() => [false as const]);
  const here = supported.map((g) => NAMES[g === false ? 'cpu' : g]).join(', ');
  const error = new ConfigError(
    `llamacpp.gpu is "${setting}", but node-llama-cpp's prebuilt ${NAMES[setting]} build of llama.cpp cannot run on this machine ` +
      `(it supports: ${here}; ${(cause as Error)?.message ?? String(cause)}). A ${NAMES[setting]} host needs the GPU's driver ` +
      `(README, "GPU offload"); or set llamacpp.gpu: auto (the GPU when there is one, the CPU otherwise) or false (the CPU).`,
  );
  return error;
}

/** The last error line llama.cpp logged since the previous call (and forgets it). */
export function takeLastRuntimeError(): string | undefined {
  const e = lastError;
  lastError = undefined;
  return e;
}
