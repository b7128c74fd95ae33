// Builds one engine per catalog model from its `engine` config and finds it by model id.
import type { ModelConfig } from '../../config.js';
import { DomainError } from '../errors.js';
import type { Engine } from './engine.js';
import type { EngineRegistry } from './inference-service.js';
import { OpenAIEngine } from './openai/openai-engine.js';

export interface EngineLogger {
  warn(obj: object, msg?: string): void;
}

export class Engines implements EngineRegistry {
  private readonly byModel = new Map<string, Engine>();

  constructor(models: ModelConfig[], logger: EngineLogger, env: NodeJS.ProcessEnv = process.env) {
    for (const m of models) {
      switch (m.engine.type) {
        case 'openai':
          this.byModel.set(m.id, new OpenAIEngine(m.engine, { logger, env }));
          break;
      }
    }
  }

  get(modelId: string): Engine {
    const engine = this.byModel.get(modelId);
    if (!engine) throw new DomainError('model_unavailable', `The model '${modelId}' is not available right now.`);
    return engine;
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.byModel.values()].map((e) => e.close?.()));
  }
}
