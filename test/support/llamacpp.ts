// Test support for the in-process engine: the project's own GGUF fixtures in a temporary directory,
// and engine builders on them (threads: 1, as tiny models want on a 2-core machine).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
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
