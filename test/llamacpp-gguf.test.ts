// The GGUF fixtures the project writes, and the pre-flight inspection that keeps a malformed file from
// reaching llama.cpp (which would abort the whole process on some of them).
import { spawn } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { DomainError } from '../src/domain/errors.js';
import { chatFixtureSpec, embeddingFixtureSpec, rerankerFixtureSpec } from '../src/fixtures/gguf-fixtures.js';
import { inspectGgufFile, ModelFileError } from '../src/domain/inference/llamacpp/gguf-inspect.js';
import { writeGguf, type GgufSpec } from '../src/fixtures/gguf-writer.js';
import { CatalogMismatchError } from '../src/domain/inference/llamacpp/llamacpp-engine.js';
import { collectingLogger, llamaEngine, makeFixtureDir, neverAborted } from './support/llamacpp.js';

const fixtures = makeFixtureDir();
afterAll(() => fixtures.remove());

function without(spec: GgufSpec, key: string): GgufSpec {
  return { ...spec, metadata: spec.metadata.filter(([k]) => k !== key) };
}

function refusal(file: string): string {
  try {
    inspectGgufFile(file);
  } catch (e) {
    expect(e).toBeInstanceOf(ModelFileError);
    return (e as Error).message;
  }
  throw new Error(`${file} was not refused`);
}

describe('the fixtures', () => {
  it('are each under 2 MB', () => {
    for (const file of Object.values(fixtures.files)) expect(statSync(file).size).toBeLessThan(2 * 1024 * 1024);
  });

  it('are the same bytes for the same seed and differ for another', () => {
    expect(writeGguf(chatFixtureSpec()).equals(writeGguf(chatFixtureSpec()))).toBe(true);
    expect(writeGguf(embeddingFixtureSpec()).equals(writeGguf(embeddingFixtureSpec()))).toBe(true);
    expect(writeGguf(chatFixtureSpec({ seed: 7 })).equals(writeGguf(chatFixtureSpec()))).toBe(false);
  });

  it('pass the inspection and declare what the catalog is checked against', () => {
    const chat = inspectGgufFile(fixtures.files.chat).facts;
    expect(chat).toMatchObject({ architecture: 'llama', contextLength: 2048, hasChatTemplate: true });
    const embed = inspectGgufFile(fixtures.files.embedding).facts;
    expect(embed).toMatchObject({ architecture: 'bert', contextLength: 512, embeddingLength: 64, poolingType: 1 });
    const rerank = inspectGgufFile(fixtures.files.reranker).facts;
    expect(rerank).toMatchObject({ architecture: 'bert', poolingType: 4, hasClassifierHead: true });
    expect(embed.hasClassifierHead).toBe(false);
  });
});

describe('the pre-flight inspection refuses', () => {
  it('a llama model without llama.feed_forward_length, naming the file and the key', () => {
    const file = fixtures.write('no-ff.gguf', without(chatFixtureSpec(), 'llama.feed_forward_length'));
    const message = refusal(file);
    expect(message).toContain(file);
    expect(message).toContain('"llama.feed_forward_length"');
  });

  it('a llama model without llama.attention.head_count', () => {
    const message = refusal(fixtures.write('no-heads.gguf', without(chatFixtureSpec(), 'llama.attention.head_count')));
    expect(message).toContain('"llama.attention.head_count"');
  });

  it('a vocabulary with a duplicate token, naming the token and both ids', () => {
    const spec = chatFixtureSpec();
    const tokens = spec.metadata.find(([k]) => k === 'tokenizer.ggml.tokens')![1] as { items: string[] };
    tokens.items[260] = tokens.items[98]!; // a second "b" (byte 0x62) where a merge was
    const message = refusal(fixtures.write('dup.gguf', spec));
    expect(message).toMatch(/duplicate token "b" \(ids 98 and 260\)/);
  });

  it('a file truncated inside its tensor data', () => {
    const whole = readFileSync(fixtures.files.chat);
    const message = refusal(fixtures.write('cut-data.gguf', whole.subarray(0, Math.floor(whole.length * 0.6))));
    expect(message).toContain('truncated');
  });

  it('a file truncated inside its metadata', () => {
    const whole = readFileSync(fixtures.files.embedding);
    const message = refusal(fixtures.write('cut-meta.gguf', whole.subarray(0, 1500)));
    expect(message).toContain('truncated');
  });

  it('a file with a bad magic', () => {
    const bytes = Buffer.from(readFileSync(fixtures.files.reranker));
    bytes.write('GGML', 0, 'latin1');
    expect(refusal(fixtures.write('magic.gguf', bytes))).toContain('bad magic "GGML"');
  });

  it('an empty file', () => {
    expect(refusal(fixtures.write('empty.gguf', Buffer.alloc(0)))).toContain('not a GGUF file');
  });

  it('an array length larger than the file', () => {
    const bytes = Buffer.from(readFileSync(fixtures.files.chat));
    bytes.writeBigUInt64LE(1n << 40n, 16); // the key/value count
    expect(refusal(fixtures.write('huge.gguf', bytes))).toContain('truncated or corrupt');
  });

  it('a special token id outside the vocabulary', () => {
    const spec = chatFixtureSpec();
    spec.metadata = spec.metadata.map(([k, v]) =>
      k === 'tokenizer.ggml.eos_token_id' ? [k, { ...v, value: 99_999 } as typeof v] : [k, v],
    );
    expect(refusal(fixtures.write('eos.gguf', spec))).toContain('"tokenizer.ggml.eos_token_id" is 99999');
  });
});

/** Loads `file` with node-llama-cpp in a child process, skipping the inspection. */
function loadUnchecked(file: string): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(import.meta.dirname, 'support/load-gguf-unchecked.mjs'), file], {
      stdio: ['ignore', 'pipe', 'ignore'],
      // ggml would otherwise look for gdb to print a backtrace when it aborts.
      env: { ...process.env, GGML_NO_BACKTRACE: '1' },
    });
    let stdout = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.on('error', reject);
    child.on('exit', (code, signal) => resolve({ code, signal, stdout }));
  });
}

describe('what the inspection refuses', () => {
  it('would have aborted the whole process had llama.cpp loaded it', async () => {
    const spec = chatFixtureSpec();
    const tokens = spec.metadata.find(([k]) => k === 'tokenizer.ggml.tokens')![1] as { items: string[] };
    tokens.items[260] = tokens.items[98]!;
    const duplicate = fixtures.write('dup-unchecked.gguf', spec);
    const noFeedForward = fixtures.write('no-ff-unchecked.gguf', without(chatFixtureSpec(), 'llama.feed_forward_length'));
    const runs = await Promise.all([duplicate, noFeedForward].map(loadUnchecked));
    for (const run of runs) {
      expect(run.stdout).not.toContain('loaded');
      expect(run.stdout).not.toContain('threw');
      expect(run.signal === 'SIGABRT' || run.code === 134).toBe(true);
    }
  });
});

describe('a model whose file cannot be served', () => {
  it('is reported and answers 503 model_unavailable while another model serves', async () => {
    const broken = fixtures.write('broken.gguf', without(chatFixtureSpec(), 'llama.attention.head_count'));
    const logger = collectingLogger();
    const bad = llamaEngine('chat', { file: broken }, { id: 'chat-broken', logger });
    const good = llamaEngine('chat', { file: fixtures.files.chat });
    await Promise.all([bad.load(), good.load()]);
    expect(bad.status).toBe('failed');
    expect(good.status).toBe('ready');
    const error = logger.lines.find((l) => l.level === 'error');
    expect(error?.msg).toContain(broken);
    expect(error?.msg).toContain('llama.attention.head_count');
    const call = bad.chat({ messages: [{ role: 'user', content: 'hi' }], maxTokens: 4 }, neverAborted());
    await expect(call).rejects.toMatchObject({ code: 'model_unavailable', status: 503 });
    await expect(bad.countChatTokens([{ role: 'user', content: 'hi' }])).rejects.toBeInstanceOf(DomainError);
    const answer = await good.chat({ messages: [{ role: 'user', content: 'hi' }], maxTokens: 4, temperature: 0 }, neverAborted());
    expect(answer.usage.completionTokens).toBe(4);
    await Promise.all([bad.close(), good.close()]);
  });

  it('when missing, says which pull command fetches it', async () => {
    const logger = collectingLogger();
    const missing = llamaEngine(
      'embedding',
      { file: path.join(fixtures.dir, 'absent.gguf'), source: 'hf:acme/tiny-embed-GGUF/absent.gguf' },
      { logger, env: { MODELS_DIR: fixtures.dir } },
    );
    await missing.load();
    expect(missing.status).toBe('failed');
    expect(missing.failureReason).toContain(
      'the model file is missing; fetch it with `npx tollgate models pull hf:acme/tiny-embed-GGUF/absent.gguf`',
    );
    // The call says what /v1/models and /readyz say: the file is missing, not broken.
    await expect(missing.embed(['x'], neverAborted())).rejects.toMatchObject({
      code: 'model_unavailable',
      message: `The model 'embedding-test' is not available right now: its model file is not on the server (not downloaded yet).`,
    });
  });

  it('serves a missing model once its file is there, without a restart', async () => {
    const file = path.join(fixtures.dir, 'arrives-later.gguf');
    const later = llamaEngine('embedding', { file });
    await later.load();
    await expect(later.embed(['x'], neverAborted())).rejects.toMatchObject({ code: 'model_unavailable' });
    fixtures.write('arrives-later.gguf', readFileSync(fixtures.files.embedding));
    const { embeddings } = await later.embed(['x'], neverAborted());
    expect(embeddings[0]).toHaveLength(64);
    expect(later.status).toBe('ready');
    await later.close();
  });

  it('serves a lazy model whose file was still being copied in when it was first called, once the file is whole', async () => {
    const whole = readFileSync(fixtures.files.embedding);
    const file = fixtures.write('copied-in.gguf', whole.subarray(0, whole.length / 2));
    const lazy = llamaEngine('embedding', { file, load: 'lazy' });
    expect(lazy.preflight()).toHaveProperty('error'); // as at start-up
    expect(lazy.status).toBe('failed');
    const reads = vi.spyOn(lazy, 'preflight');
    for (let i = 0; i < 3; i++)
      await expect(lazy.embed(['x'], neverAborted())).rejects.toMatchObject({
        code: 'model_unavailable',
        message: expect.stringContaining('its model file could not be loaded (see the server log)'),
      });
    expect(reads).not.toHaveBeenCalled(); // the same broken file is not read again on every call
    expect(lazy.availability.available).toBe(false);
    fixtures.write('copied-in.gguf', whole); // the rest of the copy arrives
    expect(lazy.availability).toEqual({ available: true, reason: null });
    expect((await lazy.embed(['x'], neverAborted())).embeddings[0]).toHaveLength(64);
    expect(lazy.status).toBe('ready');
    await lazy.close();
  });

  it('loads a model again once a file it failed on has changed, and only then', async () => {
    const whole = readFileSync(fixtures.files.embedding);
    const file = fixtures.write('grows.gguf', whole.subarray(0, 200_000));
    const model = llamaEngine('embedding', { file });
    await model.load(); // eager: failed at start-up
    expect(model.status).toBe('failed');
    const reads = vi.spyOn(model, 'preflight');
    await expect(model.embed(['x'], neverAborted())).rejects.toMatchObject({ code: 'model_unavailable' });
    expect(reads).not.toHaveBeenCalled();
    fixtures.write('grows.gguf', whole.subarray(0, 300_000)); // still not whole: tried once more, refused
    expect(model.status).toBe('idle');
    await expect(model.embed(['x'], neverAborted())).rejects.toMatchObject({ code: 'model_unavailable' });
    await expect(model.embed(['x'], neverAborted())).rejects.toMatchObject({ code: 'model_unavailable' });
    expect(reads).toHaveBeenCalledTimes(1);
    expect(model.status).toBe('failed');
    fixtures.write('grows.gguf', whole);
    expect((await model.embed(['x'], neverAborted())).embeddings[0]).toHaveLength(64);
    expect(reads).toHaveBeenCalledTimes(2);
    await model.close();
  });

  it('names the --out path in the pull command when the file is not where a pull would put it', async () => {
    const missing = llamaEngine(
      'embedding',
      { file: 'elsewhere/e.gguf', source: 'hf:acme/repo/other-name.gguf' },
      { env: { MODELS_DIR: fixtures.dir } },
    );
    await missing.load();
    expect(missing.failureReason).toContain('`npx tollgate models pull hf:acme/repo/other-name.gguf --out elsewhere/e.gguf`');
  });

  it('that contradicts the catalog stops with a message naming the file and the key', async () => {
    const wrongDims = llamaEngine(
      'embedding',
      { file: fixtures.files.embedding },
      { id: 'embed-768', specifications: { output_dimensions: 768 } },
    );
    await expect(wrongDims.load()).rejects.toBeInstanceOf(CatalogMismatchError);
    expect(wrongDims.failureReason).toBe(
      `${fixtures.files.embedding}: "bert.embedding_length" is 64, but model "embed-768" declares specifications.output_dimensions: 768`,
    );
    const tooLong = llamaEngine('embedding', { file: fixtures.files.embedding }, { specifications: { max_tokens: 8192 } });
    expect(() => tooLong.preflight()).toThrow(
      /"bert.context_length" is 512, but model "embedding-test" declares specifications.max_tokens: 8192/,
    );
    // An embedding or rerank context must hold an input of max_tokens (node-llama-cpp reads inputs shorter than it).
    expect(() => llamaEngine('embedding', { file: path.join(fixtures.dir, 'not-there.gguf'), context_size: 512 })).toThrow(
      'model "embedding-test": engine.context_size 512 cannot hold an input of specifications.max_tokens: 512 (it needs at least 513',
    );
    expect(llamaEngine('reranking', { file: fixtures.files.reranker, context_size: 513 }).preflight()).toHaveProperty('facts');
    const notReranker = llamaEngine('reranking', { file: fixtures.files.embedding });
    expect(() => notReranker.preflight()).toThrow(
      /the GGUF has no classifier head \("cls.output.weight" or "cls.weight"\), but model "reranking-test" declares category: reranking/,
    );
  });

  it('made from the writer with no token types count is refused by llama.cpp with an error, not a crash', async () => {
    const file = fixtures.write('no-ttc.gguf', without(rerankerFixtureSpec(), 'tokenizer.ggml.token_type_count'));
    const engine = llamaEngine('reranking', { file });
    await engine.load();
    expect(engine.status).toBe('failed');
    expect(engine.failureReason).toContain('llama.cpp could not load it');
  });
});
