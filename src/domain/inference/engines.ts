// Builds one engine per catalog model from its `engine` config and finds it by model id. In-process
// (llama.cpp) models are checked against their GGUF files here, at start-up: a catalog that
// contradicts a file stops start-up; a missing or malformed file is reported and only that model
// answers 503. Eager models then load one after another in the background; `ready` says when.
import type { ModelConfig } from '../catalog/model.js';
import { DomainError } from '../errors.js';
import type { Engine, ModelAvailability } from './engine.js';
import type { EngineRegistry } from './inference-service.js';
import { LlamaCppEngine, type LlamaCppModel } from './llamacpp/llamacpp-engine.js';
import { type Backend, getRuntime, type GpuSetting, setRuntimeGpu, setRuntimeLogger } from './llamacpp/runtime.js';
import { OpenAIEngine, type UpstreamHealth } from './openai/openai-engine.js';

export interface EngineLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  debug?(obj: object, msg?: string): void;
}

/** `logger` with the catalog model's id on every line (several models may share one upstream). */
function naming(logger: EngineLogger, model: string): EngineLogger {
  const tagged = (o: object) => ({ model, ...o });
  return {
    info: (o, msg) => logger.info(tagged(o), msg),
    warn: (o, msg) => logger.warn(tagged(o), msg),
    error: (o, msg) => logger.error(tagged(o), msg),
    debug: (o, msg) => logger.debug?.(tagged(o), msg),
  };
}

function asLlamaCpp(m: ModelConfig): LlamaCppModel | undefined {
  // The engine's type decides; TypeScript does not narrow the model by its engine's discriminant.
  return m.engine.type === 'llamacpp' ? (m as LlamaCppModel) : undefined;
}

/** Where an in-process model runs, for /readyz; `reason` when it cannot serve now. */
type Placement = { status: string; backend: Backend | null; gpu_layers: number | null; layers: number | null; reason?: string };

export class Engines implements EngineRegistry {
  private readonly byModel = new Map<string, Engine>();
  private readonly inProcess: LlamaCppEngine[] = [];
  private loading: Promise<void> | undefined;
  private loaded = false;

  constructor(
    models: ModelConfig[],
    logger: EngineLogger,
    env: NodeJS.ProcessEnv = process.env,
    private readonly runtime: { gpu: GpuSetting } = { gpu: 'auto' },
  ) {
    for (const m of models) {
      const local = asLlamaCpp(m);
      if (local) {
        const engine = new LlamaCppEngine(local, { logger, env });
        this.byModel.set(m.id, engine);
        this.inProcess.push(engine);
        continue;
      }
      if (m.engine.type === 'openai') this.byModel.set(m.id, new OpenAIEngine(m.engine, { logger: naming(logger, m.id), env }));
    }
    if (this.inProcess.length > 0) {
      setRuntimeLogger({
        debug: (o, msg) => logger.debug?.(o, msg),
        info: (o, msg) => logger.info(o, msg),
        warn: (o, msg) => logger.warn(o, msg),
      });
      setRuntimeGpu(runtime.gpu);
    }
    // Reads every in-process model's file header now: a catalog contradiction throws (start-up
    // stops); a file problem of a lazy model is reported now, an eager one's when it loads.
    for (const engine of this.inProcess) {
      const checked = engine.preflight();
      if ('error' in checked && engine.loadMode === 'lazy') {
        logger.error(
          { model: engine.modelId, problem: checked.error.message },
          `model "${engine.modelId}" cannot be served: ${checked.error.message}`,
        );
      }
    }
  }

  /**
   * With an explicit `llamacpp.gpu` (cuda, vulkan) and in-process models: loads the runtime now, so
   * that a GPU build that cannot run here stops start-up (a ConfigError saying so) instead of
   * leaving every in-process model unserved. `auto` and `false` load it with the first model.
   */
  async checkRuntime(): Promise<void> {
    if (this.inProcess.length > 0 && (this.runtime.gpu === 'cuda' || this.runtime.gpu === 'vulkan')) await getRuntime();
  }

  /** Where each loaded in-process model runs (/readyz): its backend and its layers on the GPU. */
  placements(): Record<string, Placement> {
    const out: Record<string, Placement> = {};
    for (const engine of this.inProcess) {
      const p = engine.placement;
      const { reason } = engine.availability;
      out[engine.modelId] = {
        status: engine.status,
        backend: p?.backend ?? null,
        gpu_layers: p?.gpuLayers ?? null,
        layers: p?.layers ?? null,
        // Why a model cannot serve (a missing or broken file), as /v1/models says it: no path.
        ...(reason ? { reason } : {}),
      };
    }
    return out;
  }

  /** Loads the eager in-process models, one after another; resolves when all are loaded or failed. */
  startLoading(): Promise<void> {
    this.loading ??= (async () => {
      try {
        for (const engine of this.inProcess) if (engine.loadMode === 'eager') await engine.load();
      } finally {
        this.loaded = true;
      }
    })();
    return this.loading;
  }

  /** True once every eager model has loaded (or failed to, which is reported): /readyz. */
  get ready(): boolean {
    return this.loaded || !this.inProcess.some((e) => e.loadMode === 'eager');
  }

  get(modelId: string): Engine {
    const engine = this.byModel.get(modelId);
    if (!engine) throw new DomainError('model_unavailable', `The model '${modelId}' is not available right now.`);
    return engine;
  }

  /**
   * The circuit breaker of each base URL of each forwarding model, by model id, for /readyz.
   * Base URLs are named by their index in the config: addresses stay in the logs.
   */
  upstreamHealth(): Record<string, UpstreamHealth[]> {
    const out: Record<string, UpstreamHealth[]> = {};
    for (const [id, engine] of this.byModel) if (engine instanceof OpenAIEngine) out[id] = engine.health();
    return out;
  }

  /**
   * Whether a model can serve a call now: an in-process model whose file is missing or refused
   * cannot; a forwarding model is taken as available (its upstream is only known when called).
   */
  availability(modelId: string): ModelAvailability {
    const local = this.local(modelId);
    if (local) return local.availability;
    return this.byModel.has(modelId) ? { available: true, reason: null } : { available: false, reason: 'no engine serves it' };
  }

  /** The in-process engine of a model, for tests and diagnostics. */
  local(modelId: string): LlamaCppEngine | undefined {
    return this.inProcess.find((e) => e.modelId === modelId);
  }

  async close(): Promise<void> {
    // Closed first: a model still loading is disposed as soon as its load ends, the rest never start.
    await Promise.allSettled([...this.byModel.values()].map((e) => e.close?.()));
    await this.loading?.catch(() => {});
  }
}
