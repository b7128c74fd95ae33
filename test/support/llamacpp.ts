// Test support for the in-process engine: the project's own GGUF fixtures in a temporary directory,
// and engine builders on them (threads: 1, as tiny models want on a 2-core machine).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import { startTestServer, type TestServer } from './harness.js';
import { seed } from './seed.js';
import { writeFixtures } from '../../src/fixtures/gguf-fixtures.js';
import { writeGguf, type GgufSpec } from '../../src/fixtures/gguf-writer.js';
import {
  LlamaCppEngine,
  type LlamaCppEngineConfig,
  type LlamaCppLogger,
  type LlamaCppModel,
} from '../../src/domain/inference/llamacpp/llamacpp-engine.js';

export interface FixtureDir {
  dir: string;
  files: ReturnType<typeof writeFixtures>;
  /** Writes a (possibly broken) model next to the fixtures and returns its path. */
  write(name: string, content: GgufSpec | Buffer): string;
  remove(): void;
}

export function makeFixtureDir(): FixtureDir {
  const dir = mkdtempSync(path.join(tmpdir(), 'tollgate-gguf-'));
  const files = writeFixtures(dir);
  return {
    dir,
    files,
    write(name, content) {
      const file = path.join(dir, name);
      writeFileSync(file, Buffer.isBuffer(content) ? content : writeGguf(content));
      return file;
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

export interface LogLine {
  level: 'info' | 'warn' | 'error';
  obj: object;
  msg?: string;
}

export function collectingLogger(): LlamaCppLogger & { lines: LogLine[] } {
  const lines: LogLine[] = [];
  return {
    lines,
    info: (obj, msg) => lines.push({ level: 'info', obj, msg }),
    warn: (obj, msg) => lines.push({ level: 'warn', obj, msg }),
    error: (obj, msg) => lines.push({ level: 'error', obj, msg }),
  };
}

type Engine = Partial<Omit<LlamaCppEngineConfig, 'type'>> & { file: string };

const SPECS = {
  chat: { context_window: 1024, max_output_tokens: 256 },
  embedding: { max_tokens: 512, output_dimensions: 64 },
  reranking: { max_tokens: 512 },
  moderation: { max_tokens: 512 },
} as const;

/** An engine for a catalog entry of `category` on `engine.file`, with tiny-model defaults. */
export function llamaEngine(
  category: LlamaCppModel['category'],
  engine: Engine,
  opts: { id?: string; specifications?: Record<string, number>; logger?: LlamaCppLogger; env?: NodeJS.ProcessEnv } = {},
): LlamaCppEngine {
  const model = {
    id: opts.id ?? `${category}-test`,
    category,
    specifications: { ...SPECS[category], ...opts.specifications },
    engine: { type: 'llamacpp', threads: 1, parallel: 1, ...engine },
  } as LlamaCppModel;
  return new LlamaCppEngine(model, { logger: opts.logger, env: opts.env });
}

export const neverAborted = () => new AbortController().signal;

/**
 * For a suite on the chat fixture: a fixture directory, and a chat engine on it loaded before the
 * suite (handed to `loaded`) and closed after it, with the directory removed.
 */
export function withLoadedChatEngine(loaded: (engine: LlamaCppEngine) => void): FixtureDir {
  const fixtures = makeFixtureDir();
  let engine: LlamaCppEngine | undefined;
  beforeAll(async () => {
    engine = llamaEngine('chat', { file: fixtures.files.chat });
    await engine.load();
    expect(engine.status).toBe('ready');
    loaded(engine);
  });
  afterAll(async () => {
    await engine?.close();
    fixtures.remove();
  });
  return fixtures;
}

/**
 * `tiny-chat` and `tiny-embed` on the fixtures, as entries of a catalog's `models:` list;
 * `chatEngine` and `embedEngine` add keys to their engines (e.g. ", gpu_layers: 0").
 */
export function tinyModelsYaml(fixtures: FixtureDir, extra: { chatEngine?: string; embedEngine?: string } = {}): string {
  return `  - id: tiny-chat
    category: chat
    owned_by: tests
    created: 1735689600
    version: fixture
    status: beta
    capabilities: { chat_completion: true, streaming: true, function_calling: false }
    pricing: { input_price_per_million: 1, output_price_per_million: 2, currency: usd }
    specifications: { context_window: 1024, max_output_tokens: 256, training_cutoff: "2025-01" }
    engine: { type: llamacpp, file: "${fixtures.files.chat}", threads: 1${extra.chatEngine ?? ''} }
  - id: tiny-embed
    category: embedding
    owned_by: tests
    created: 1735689600
    version: fixture
    status: beta
    capabilities: { embeddings: true }
    pricing: { price_per_million_tokens: 0.1, currency: usd }
    specifications: { max_tokens: 512, output_dimensions: 64 }
    engine: { type: llamacpp, file: "${fixtures.files.embedding}", threads: 1${extra.embedEngine ?? ''} }
`;
}

/**
 * For a suite against the server with in-process models: tollgate started on `yaml`, its models
 * loaded, and a developer account with 5.00 in its wallet, handed to `ready` before the suite; the
 * server closed and the fixture directory removed after it.
 */
export function withLoadedServer(
  yaml: (upstreamUrl: string) => string,
  fixtures: FixtureDir,
  ready: (s: TestServer, account: { key: string; accountId: string }) => void,
): void {
  let s: TestServer | undefined;
  beforeAll(async () => {
    s = await startTestServer({ yaml });
    await s.services.engines.startLoading();
    const { apiKey, id } = await seed(s).account({ tier: 'developer' }).wallet('5.00');
    ready(s, { key: apiKey, accountId: id });
  });
  afterAll(async () => {
    await s?.close();
    fixtures.remove();
  });
}
