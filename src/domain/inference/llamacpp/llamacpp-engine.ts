// In-process inference with llama.cpp (node-llama-cpp's prebuilt CPU build): one engine per catalog
// model, serving the model's category from a GGUF file.
//   - chat: the chat template the GGUF carries, sampling with OpenAI's parameters, stop sequences cut
//     before the sequence, streaming token by token, exact usage from the model's tokenizer, and a
//     caller that goes away stops generation before the next token;
//   - embeddings: the model's own pooling, L2-normalised;
//   - rerank: llama.cpp's ranking head, the logit through a sigmoid (node-llama-cpp does it);
//   - moderation: a guard model's verdict generated under a grammar (./guard.ts).
// Each model has `parallel` slots (sequences of one context for chat and moderation, contexts for
// embeddings and rerank) behind a bounded FIFO queue (./slot-pool.ts). A file is inspected before
// llama.cpp loads it (./gguf-inspect.ts); a model that cannot load answers 503 model_unavailable
// while the others serve. The parts: ./runners.ts (types), ./embeddings.ts (embeddings, rerank),
// ./moderation.ts (the guard model); chat and loading are here.
import { randomInt } from 'node:crypto';
import { statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import {
  type LlamaContextSequence,
  type LlamaGrammar,
  type LlamaEmbeddingContext,
  type LlamaModel,
  type LlamaRankingContext,
  resolveChatWrapper,
  type Token,
} from 'node-llama-cpp';
import { DomainError } from '../../errors.js';
import {
  CALL_DEADLINE_MESSAGE,
  type ChatMessage,
  DEFAULT_MAX_DURATION_MS,
  type Engine,
  type EngineChatRequest,
  type EngineChatResult,
  type EngineEmbedResult,
  type EngineModerationResult,
  type EngineRerankResult,
  type EngineStreamEvent,
  type ModelAvailability,
  type ToolDefinition,
} from '../engine.js';
import { checkToolSchemas, formatGrammar, grammarState, grammarStops, promptTokens, usesTools } from './chat-features.js';
import { type ChoiceBase, chatChoices, samplingOf, streamChoices } from './chat-run.js';
import { CompletionText, decodesWithoutContext } from './completion-text.js';
import { embeddingFraming, embeddingInput, embedOn, rerankOn } from './embeddings.js';
import { inspectGgufFile, ModelFileError, type GgufFacts } from './gguf-inspect.js';
import { CODE_DIGITS_GRAMMAR, VERDICT_GRAMMAR } from './guard.js';
import { pullCommandFor, resolveModelFile } from './model-files.js';
import { guardPromptTokens, moderateOn } from './moderation.js';
import {
  abortReason,
  CatalogMismatchError,
  type ChatRunner,
  DEFAULT_QUEUE,
  type EngineStatus,
  type Generation,
  type LlamaCppLogger,
  type LlamaCppModel,
  noopLogger,
  prefill,
  type Runner,
  VERDICT_MAX_TOKENS,
} from './runners.js';
import { type Backend, backendOf, getRuntime, quietOverflowWhile, takeLastRuntimeError } from './runtime.js';
import { SlotPool, type QueueLimits } from './slot-pool.js';

export {
  CatalogMismatchError,
  DEFAULT_QUEUE,
  type EngineStatus,
  type LlamaCppEngineConfig,
  type LlamaCppLogger,
  type LlamaCppModel,
} from './runners.js';

/** A call the engine's own loop runs: one choice, text only, no log-probabilities. */
const plain = (req: EngineChatRequest) => (req.n ?? 1) === 1 && !req.logprobs && !usesTools(req);

/**
 * Which file is at `path` (null: none): a file copied in, grown, or renamed into place since has a
 * different one (inode, size or times), so a failure on it no longer says anything about it.
 */
function fileVersion(path: string): string | null {
  try {
    const s = statSync(path);
    return `${s.ino}:${s.size}:${s.mtimeMs}:${s.ctimeMs}`;
  } catch {
    return null;
  }
}

/** The request's seed (kept within llama.cpp's 32 bits), or a random one. */
const seedOf = (req: EngineChatRequest) => (req.seed === undefined ? randomInt(2 ** 31) : ((req.seed % 2 ** 31) + 2 ** 31) % 2 ** 31);

export class LlamaCppEngine implements Engine {
  readonly modelId: string;
  readonly file: string;
  /** Counters for observability and tests. */
  readonly stats = { generatedTokens: 0 };
  private statusValue: EngineStatus = 'idle';
  private failure: ModelFileError | CatalogMismatchError | undefined;
  /** What the last preflight found wrong with the file (a lazy model is not loaded until called). */
  private fileProblem: ModelFileError | undefined;
  /** The file the last preflight read (fileVersion): a failure stands as long as the file is that one. */
  private inspected: string | null = null;
  private loading: Promise<void> | undefined;
  private runner: Runner | undefined;
  /** Where the loaded model runs: llama.cpp's backend and the layers offloaded to the GPU. */
  private placed: { backend: Backend; gpuLayers: number; layers: number } | undefined;
  private readonly logger: LlamaCppLogger;
  private readonly threads: number;
  private readonly parallel: number;
  private readonly queue: QueueLimits;
  private readonly maxDurationMs: number;
  private readonly env: NodeJS.ProcessEnv;

  constructor(
    private readonly config: LlamaCppModel,
    opts: { logger?: LlamaCppLogger; env?: NodeJS.ProcessEnv } = {},
  ) {
    this.modelId = config.id;
    this.file = resolveModelFile(config.engine.file);
    this.logger = opts.logger ?? noopLogger;
    this.env = opts.env ?? process.env;
    this.threads = config.engine.threads ?? availableParallelism();
    this.parallel = config.engine.parallel ?? 1;
    this.queue = {
      maxDepth: config.engine.queue?.max_depth ?? DEFAULT_QUEUE.max_depth,
      maxWaitMs: config.engine.queue?.max_wait_ms ?? DEFAULT_QUEUE.max_wait_ms,
    };
    this.maxDurationMs = config.engine.max_duration_ms ?? DEFAULT_MAX_DURATION_MS;
    // An embedding or rerank context holds max_tokens and one more (node-llama-cpp reads inputs
    // shorter than the context): a smaller one would refuse inputs the catalog publishes. Whatever
    // the file, so start-up stops on it even while the file is missing.
    const contextSize = config.engine.context_size;
    if ((config.category === 'embedding' || config.category === 'reranking') && contextSize !== undefined) {
      const { max_tokens } = config.specifications;
      if (contextSize <= max_tokens) {
        throw new CatalogMismatchError(
          `model "${config.id}": engine.context_size ${contextSize} cannot hold an input of specifications.max_tokens: ${max_tokens} (it needs at least ${max_tokens + 1}; leave it out to get that)`,
        );
      }
    }
  }

  /**
   * `failed` also for a model not loaded yet (lazy) whose file is known to be missing or refused, as
   * for an eager one; `idle` for a failed one whose file has changed since (the next call loads it).
   */
  get status(): EngineStatus {
    if (this.statusValue === 'idle' || this.statusValue === 'failed') return this.standingProblem() ? 'failed' : 'idle';
    return this.statusValue;
  }

  /**
   * Why the model cannot serve now, if a file problem or failed load says so: the one found on the
   * file that is there now (or on none, when it is still missing). A file that has changed since
   * (arrived, grown, replaced) is tried again by the next call.
   */
  private standingProblem(): ModelFileError | CatalogMismatchError | undefined {
    const problem = this.statusValue === 'failed' ? this.failure : this.statusValue === 'idle' ? this.fileProblem : undefined;
    if (!problem) return undefined;
    return fileVersion(this.file) === this.inspected ? problem : undefined;
  }

  /** Once loaded: its backend (cpu, cuda, vulkan) and how many of its layers run on the GPU. */
  get placement(): { backend: Backend; gpuLayers: number; layers: number } | null {
    return this.placed ?? null;
  }

  /** Calls waiting for a slot now (metrics). */
  get queueDepth(): number {
    return this.runner?.pool.queued ?? 0;
  }

  get loadMode(): 'eager' | 'lazy' {
    return this.config.engine.load ?? 'eager';
  }

  /** Whether a call would be served now; the reason names no path (clients see it). */
  get availability(): ModelAvailability {
    if (this.statusValue === 'closed') return { available: false, reason: 'the server is shutting down' };
    // A file that has arrived or changed since the problem was found loads on the next call.
    const problem = this.standingProblem();
    if (!problem) return { available: true, reason: null };
    if (problem instanceof ModelFileError && problem.missing)
      return { available: false, reason: 'its model file is not on the server (not downloaded yet)' };
    return { available: false, reason: 'its model file could not be loaded (see the server log)' };
  }

  /** Why the model is not serving, for logs and tests (clients get a fixed message). */
  get failureReason(): string | undefined {
    return (this.failure ?? this.standingProblem())?.message;
  }

  /**
   * Reads and checks the file without loading it. A file problem is reported and leaves the model
   * failed (503 for its calls); a contradiction with the catalog is thrown (start-up stops).
   */
  preflight(): { facts: GgufFacts } | { error: ModelFileError } {
    // Before reading: a file that changes while it is read is a different one by the next call.
    this.inspected = fileVersion(this.file);
    try {
      const { facts } = inspectGgufFile(this.file);
      this.checkCatalog(facts);
      this.fileProblem = undefined;
      return { facts };
    } catch (e) {
      if (e instanceof ModelFileError) {
        this.fileProblem = this.missingFileHint(e);
        return { error: this.fileProblem };
      }
      throw e;
    }
  }

  private missingFileHint(e: ModelFileError): ModelFileError {
    if (e.problem !== 'the model file is missing') return e;
    return new ModelFileError(
      this.config.engine.file,
      `the model file is missing; fetch it with \`${pullCommandFor(this.config.engine, this.env)}\``,
      { missing: true },
    );
  }

  private checkCatalog(facts: GgufFacts): void {
    const { config } = this;
    const file = this.config.engine.file;
    const arch = facts.architecture;
    const mismatch = (key: string, actual: unknown, declared: string) =>
      new CatalogMismatchError(`${file}: "${key}" is ${String(actual)}, but model "${config.id}" declares ${declared}`);
    const ctxKey = `${arch}.context_length`;
    if (config.category === 'chat') {
      if (facts.contextLength !== null && config.specifications.context_window > facts.contextLength) {
        throw mismatch(ctxKey, facts.contextLength, `specifications.context_window: ${config.specifications.context_window}`);
      }
      return;
    }
    if (facts.contextLength !== null && config.specifications.max_tokens > facts.contextLength) {
      throw mismatch(ctxKey, facts.contextLength, `specifications.max_tokens: ${config.specifications.max_tokens}`);
    }
    if (config.category === 'embedding') {
      if (facts.embeddingLength !== null && facts.embeddingLength !== config.specifications.output_dimensions) {
        throw mismatch(
          `${arch}.embedding_length`,
          facts.embeddingLength,
          `specifications.output_dimensions: ${config.specifications.output_dimensions}`,
        );
      }
      if (facts.poolingType === 0 || facts.poolingType === 4) {
        throw mismatch(
          `${arch}.pooling_type`,
          facts.poolingType,
          'category: embedding (an embedding model pools by mean, CLS or last token)',
        );
      }
    }
    // node-llama-cpp asks llama.cpp for rank pooling itself; what it needs is a classifier head.
    if (config.category === 'reranking' && !facts.hasClassifierHead) {
      throw new CatalogMismatchError(
        `${file}: the GGUF has no classifier head ("cls.output.weight" or "cls.weight"), but model "${config.id}" declares category: reranking`,
      );
    }
  }

  /** Loads the model (once); never rejects for a bad file, only for a catalog contradiction. */
  load(): Promise<void> {
    this.loading ??= this.loadOnce();
    return this.loading;
  }

  private fail(error: ModelFileError | CatalogMismatchError): void {
    this.failure = error;
    this.statusValue = 'failed';
    this.logger.error(
      { model: this.modelId, file: this.config.engine.file, problem: error.message },
      `model "${this.modelId}" is not served: ${error.message}`,
    );
  }

  private async loadOnce(): Promise<void> {
    if (this.statusValue === 'closed') return;
    this.statusValue = 'loading';
    const started = Date.now();
    let facts: GgufFacts;
    try {
      const checked = this.preflight();
      if ('error' in checked) return this.fail(checked.error);
      facts = checked.facts;
    } catch (e) {
      if (e instanceof CatalogMismatchError) {
        this.fail(e);
        throw e;
      }
      return this.fail(new ModelFileError(this.config.engine.file, `refused: ${(e as Error).message}`));
    }
    this.logger.info(
      { model: this.modelId, file: this.config.engine.file, architecture: facts.architecture },
      `loading model "${this.modelId}"`,
    );
    let model: LlamaModel | undefined;
    try {
      const llama = await getRuntime();
      takeLastRuntimeError();
      let reported = -1;
      model = await llama.loadModel({
        modelPath: this.file,
        // A CPU build offloads nothing whatever this says.
        gpuLayers: this.config.engine.gpu_layers ?? 'auto',
        onLoadProgress: (progress) => {
          const step = Math.floor(progress * 4);
          if (step > reported) {
            reported = step;
            this.logger.info(
              { model: this.modelId, progress: Math.round(progress * 100) },
              `loading model "${this.modelId}": ${Math.round(progress * 100)}%`,
            );
          }
        },
      });
      const runner = await this.createRunner(model);
      if ((this.statusValue as EngineStatus) === 'closed') {
        await model.dispose();
        return;
      }
      this.runner = runner;
      this.placed = { backend: backendOf(llama), gpuLayers: model.gpuLayers, layers: model.fileInsights.totalLayers };
      this.statusValue = 'ready';
      const { backend, gpuLayers, layers } = this.placed;
      this.logger.info(
        { model: this.modelId, ms: Date.now() - started, parallel: this.parallel, threads: this.threads, backend, gpuLayers, layers },
        `model "${this.modelId}" loaded on ${backend === 'cpu' ? 'the CPU' : `${backend}: ${gpuLayers} of ${layers} layers on the GPU`}`,
      );
    } catch (e) {
      await model?.dispose().catch(() => {});
      const why = takeLastRuntimeError() ?? (e as Error).message;
      this.fail(new ModelFileError(this.config.engine.file, `llama.cpp could not load it: ${why}`));
    }
  }

  private async createRunner(model: LlamaModel): Promise<Runner> {
    const { config } = this;
    const engine = config.engine;
    const threads = this.threads;
    const train = model.trainContextSize;
    if (config.category === 'embedding' || config.category === 'reranking') {
      // The most the model reads is what the catalog publishes and the service admits: max_tokens,
      // [CLS] and [SEP] (a pair's framing) included. node-llama-cpp takes inputs shorter than the
      // context, so the context is one token longer (not cut to the GGUF's context_length, which
      // max_tokens may equal: no position past max_tokens is used; the constructor keeps a smaller
      // context_size out). A BERT-style model reads its whole input in one batch: the batch is the context.
      const maxInputTokens = config.specifications.max_tokens;
      const contextSize = engine.context_size ?? maxInputTokens + 1;
      const opts = { contextSize, batchSize: engine.batch_size ?? contextSize, threads };
      if (config.category === 'embedding') {
        const contexts: LlamaEmbeddingContext[] = [];
        for (let i = 0; i < this.parallel; i++) contexts.push(await quietOverflowWhile(() => model.createEmbeddingContext(opts)));
        return {
          kind: 'embedding',
          model,
          contexts,
          pool: new SlotPool(contexts, this.queue, this.modelId),
          maxInputTokens,
          framing: embeddingFraming(model),
          counted: new Map(),
        };
      }
      const contexts: LlamaRankingContext[] = [];
      for (let i = 0; i < this.parallel; i++) contexts.push(await quietOverflowWhile(() => model.createRankingContext(opts)));
      // The tokens around a query and a document (e.g. [CLS] q [SEP] d [SEP]), the same for every pair.
      const probe = model.tokenize('x', false, 'trimLeadingSpace').length;
      const framing = contexts[0]!.calculateInputLength('x', 'x') - 2 * probe;
      return { kind: 'reranking', model, contexts, pool: new SlotPool(contexts, this.queue, this.modelId), maxInputTokens, framing };
    }

    const wrapper = resolveChatWrapper(model);
    const llama3Headers = model.tokenize('<|start_header_id|>', true).length === 1 && model.tokenize('<|eot_id|>', true).length === 1;
    let contextSize: number;
    let guard: ChatRunner['guard'];
    if (config.category === 'moderation') {
      const llama = await getRuntime();
      guard = {
        verdict: await llama.createGrammar({ grammar: VERDICT_GRAMMAR }),
        digits: await llama.createGrammar({ grammar: CODE_DIGITS_GRAMMAR }),
        llama3Headers,
      };
      const overhead = guardPromptTokens(model, wrapper, guard.llama3Headers, '').length;
      contextSize = engine.context_size ?? Math.min(train, overhead + config.specifications.max_tokens + VERDICT_MAX_TOKENS + 8);
    } else {
      contextSize = engine.context_size ?? Math.min(train, config.specifications.context_window);
    }
    const context = await model.createContext({
      contextSize,
      sequences: this.parallel,
      threads,
      ...(engine.batch_size ? { batchSize: engine.batch_size } : {}),
    });
    const sequences: LlamaContextSequence[] = [];
    for (let i = 0; i < this.parallel; i++) sequences.push(context.getSequence());

    const { stopGenerationTriggers } = wrapper.generateContextState({
      chatHistory: [
        { type: 'user', text: '' },
        { type: 'model', response: [] },
      ],
    });
    const stopTokens = new Set<Token>();
    const stopTexts: string[] = [];
    for (const trigger of stopGenerationTriggers) {
      const tokens = trigger.tokenize(model.tokenizer);
      if (trigger.values.every((v) => typeof v === 'string')) {
        const text = trigger.values.join('');
        if (text) stopTexts.push(text);
      } else if (tokens.length === 1) {
        stopTokens.add(tokens[0]!);
      }
    }
    const pieces = decodesWithoutContext(model) ? new Map<Token, string>() : null;
    return {
      kind: 'chat',
      model,
      context,
      pool: new SlotPool(sequences, this.queue, this.modelId),
      wrapper,
      stopTokens,
      stopTexts,
      pieces,
      contextSize,
      guard,
    };
  }

  /** A call to a model that cannot serve: the same reason as /v1/models and /readyz give. */
  private unavailable(): DomainError {
    const { reason } = this.availability;
    return new DomainError(
      'model_unavailable',
      `The model '${this.modelId}' is not available right now: ${reason ?? 'its model file could not be loaded (see the server log)'}.`,
    );
  }

  private async ready(): Promise<Runner> {
    if (this.statusValue === 'failed' && !this.standingProblem()) {
      // The file has changed since the load failed: it was missing and is there now (`models pull`
      // renames it into place when complete), or was being copied in and has grown: load it. The
      // same broken file is not loaded again on every call.
      this.statusValue = 'idle';
      this.loading = undefined;
      this.failure = undefined;
    }
    // A lazy model whose file was refused at start-up (and is the same file): not read again.
    if (this.statusValue === 'idle' && this.standingProblem()) throw this.unavailable();
    if (this.statusValue === 'idle') await this.load().catch(() => {});
    else if (this.statusValue === 'loading') await this.loading?.catch(() => {});
    if (this.statusValue !== 'ready' || !this.runner) throw this.unavailable();
    return this.runner;
  }

  private async runnerOf<K extends Runner['kind']>(kind: K): Promise<Extract<Runner, { kind: K }>> {
    const runner = await this.ready();
    if (runner.kind !== kind)
      throw new DomainError('invalid_model', `The model '${this.modelId}' does not serve this endpoint.`, { param: 'model' });
    return runner as Extract<Runner, { kind: K }>;
  }

  // ---- tokens ----

  // Message contents are plain text in the LlamaText: a "<|im_end|>" typed by a user stays text.
  private renderChat(runner: ChatRunner, messages: ChatMessage[], tools?: ToolDefinition[]): Token[] {
    return promptTokens(runner, messages, tools);
  }

  /**
   * An answer generated under a JSON grammar cannot open a tool call: with tools the model may call
   * (tool_choice auto) a response format would silently take the choice away, so the pair is refused.
   */
  unsupported(req: EngineChatRequest): { param: string; reason: string } | undefined {
    if (req.reasoningEffort !== undefined)
      return { param: 'reasoning_effort', reason: 'its engine (llama.cpp, in-process) takes no reasoning effort' };
    if (req.chatTemplateKwargs !== undefined)
      return {
        param: 'chat_template_kwargs',
        reason: 'its engine (llama.cpp, in-process) renders the chat template the model file carries, without variables',
      };
    const forced = req.toolChoice === 'required' || typeof req.toolChoice === 'object';
    if (req.responseFormat && usesTools(req) && !forced) {
      return {
        param: 'response_format',
        reason:
          "its engine (llama.cpp) cannot both hold the answer to JSON and let the model choose to call a tool; drop one, or set tool_choice to 'required' or a function",
      };
    }
    return undefined;
  }

  async countChatTokens(messages: ChatMessage[], tools?: ToolDefinition[]): Promise<number> {
    const runner = await this.runnerOf('chat');
    return this.renderChat(runner, messages, tools).length;
  }

  async countTokens(text: string): Promise<number> {
    const runner = await this.ready();
    switch (runner.kind) {
      case 'embedding':
        // What the model reads: the text with its [CLS] and [SEP].
        return embeddingInput(runner, text, true).length;
      case 'reranking':
        // As a document (or query) is read: with the pair's framing, which a pair has once.
        return runner.framing + runner.model.tokenize(text, false, 'trimLeadingSpace').length;
      default:
        return runner.model.tokenize(text, false).length;
    }
  }

  // ---- chat ----

  /**
   * The call's deadline (engine.max_duration_ms), from its start: its wait in the queue, the
   * generation and the time a stream's consumer holds a piece all count, so that no call outlives
   * its hold (start-up wants billing.hold_expiry_seconds above max_duration_ms by more than
   * STREAM_DEADLINE_GRACE_MS, InferenceService's margin for a stream its consumer stopped pulling). The signal
   * aborts with the caller's, or at the deadline with 504 upstream_timeout; `error` turns whatever
   * the abort threw then (node-llama-cpp's own AbortError) into that error.
   */
  private deadline(caller: AbortSignal) {
    const controller = new AbortController();
    const onAbort = () => controller.abort(abortReason(caller));
    const expired = new DomainError('upstream_timeout', CALL_DEADLINE_MESSAGE);
    const timer = setTimeout(() => controller.abort(expired), this.maxDurationMs);
    if (caller.aborted) onAbort();
    else caller.addEventListener('abort', onAbort, { once: true });
    return {
      signal: controller.signal,
      error: (e: unknown) => (controller.signal.reason === expired ? expired : e),
      dispose: () => {
        clearTimeout(timer);
        caller.removeEventListener('abort', onAbort);
      },
    };
  }

  /** `run` under the call's deadline (see deadline). */
  private async within<T>(caller: AbortSignal, run: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const d = this.deadline(caller);
    try {
      return await run(d.signal);
    } catch (e) {
      throw d.error(e);
    } finally {
      d.dispose();
    }
  }

  async chat(req: EngineChatRequest, signal: AbortSignal): Promise<EngineChatResult> {
    return this.within(signal, (s) => this.chatWithin(req, s));
  }

  async *chatStream(req: EngineChatRequest, signal: AbortSignal): AsyncGenerator<EngineStreamEvent> {
    const d = this.deadline(signal);
    try {
      yield* this.streamWithin(req, d.signal);
    } catch (e) {
      throw d.error(e);
    } finally {
      d.dispose();
    }
  }

  // The non-streamed call runs the same steps as the stream (./completion-text.ts does the text),
  // without an async-generator hop per token.
  private async chatWithin(req: EngineChatRequest, signal: AbortSignal): Promise<EngineChatResult> {
    if (signal.aborted) throw abortReason(signal);
    const runner = await this.runnerOf('chat');
    const prompt = this.chatPrompt(runner, req);
    const llama = await getRuntime();
    const format = await formatGrammar(llama, req, this.modelId);
    await checkToolSchemas(llama, req, this.modelId);
    const lease = await runner.pool.acquire(signal);
    try {
      if (!plain(req)) return await chatChoices(this.choiceBase(runner, lease.slot, prompt, req, format, signal));
      const generation = await this.startGeneration(runner, lease.slot, prompt, req, format, signal);
      let content = '';
      for await (const token of generation.tokens) {
        if (signal.aborted) throw abortReason(signal);
        content += generation.take(token);
        if (generation.finishReason) break;
      }
      if (signal.aborted) throw abortReason(signal);
      content += generation.end();
      return { content, finishReason: generation.finishReason ?? 'stop', usage: generation.usage() };
    } finally {
      lease.release();
    }
  }

  private async *streamWithin(req: EngineChatRequest, signal: AbortSignal): AsyncGenerator<EngineStreamEvent> {
    if (signal.aborted) throw abortReason(signal);
    const runner = await this.runnerOf('chat');
    const prompt = this.chatPrompt(runner, req);
    const llama = await getRuntime();
    const format = await formatGrammar(llama, req, this.modelId);
    await checkToolSchemas(llama, req, this.modelId);
    const lease = await runner.pool.acquire(signal);
    try {
      if (!plain(req)) {
        yield* streamChoices(this.choiceBase(runner, lease.slot, prompt, req, format, signal));
        return;
      }
      const generation = await this.startGeneration(runner, lease.slot, prompt, req, format, signal);
      // Tokens generated since the last piece (one whose bytes end inside a character gives no text yet).
      let tokens = 0;
      for await (const token of generation.tokens) {
        if (signal.aborted) throw abortReason(signal);
        const content = generation.take(token);
        tokens++;
        if (content) {
          yield { type: 'delta', content, tokens };
          tokens = 0;
        }
        if (generation.finishReason) break;
        // The consumer may have gone away while it held the delta: no further token for it.
        if (signal.aborted) throw abortReason(signal);
      }
      if (signal.aborted) throw abortReason(signal);
      const tail = generation.end();
      if (tail) yield { type: 'delta', content: tail, tokens };
      yield { type: 'finish', finishReason: generation.finishReason ?? 'stop', usage: generation.usage() };
    } finally {
      lease.release();
    }
  }

  /** The request's prompt tokens, refused when they and max_tokens do not fit the context. */
  private chatPrompt(runner: ChatRunner, req: EngineChatRequest): Token[] {
    const prompt = this.renderChat(runner, req.messages, usesTools(req) ? req.tools : undefined);
    if (prompt.length + req.maxTokens > runner.contextSize) {
      throw new DomainError(
        'context_length_exceeded',
        `The messages take ${prompt.length} tokens and max_tokens asks for ${req.maxTokens}; together they exceed the ${runner.contextSize} tokens this model is served with.`,
        { param: 'max_tokens' },
      );
    }
    return prompt;
  }

  private choiceBase(
    runner: ChatRunner,
    seq: LlamaContextSequence,
    prompt: Token[],
    req: EngineChatRequest,
    format: LlamaGrammar | undefined,
    signal: AbortSignal,
  ): ChoiceBase {
    return { runner, modelId: this.modelId, seq, prompt, req, format, signal, stats: this.stats, seed: seedOf(req) };
  }

  private async startGeneration(
    runner: ChatRunner,
    seq: LlamaContextSequence,
    prompt: Token[],
    req: EngineChatRequest,
    format: LlamaGrammar | undefined,
    signal: AbortSignal,
  ): Promise<Generation> {
    const { model, stopTokens } = runner;
    const stats = this.stats;
    // Every call starts from an empty sequence: one caller's cache never shapes another's output,
    // and the same request with temperature 0 (or the same seed) gives the same tokens.
    await seq.eraseContextTokenRanges([{ start: 0, end: seq.nextTokenIndex }]);
    const stops = [...(req.stop ?? []).filter((s) => s.length > 0), ...runner.stopTexts];
    const completion = new CompletionText(model, stops, runner.pieces, grammarStops(format));
    // The prompt a batch at a time: a caller that leaves during a long one frees the slot within a batch.
    const tokens = seq.evaluate(await prefill(seq, prompt, signal), {
      ...samplingOf(req, seedOf(req), () => completion.tokens),
      grammarEvaluationState: grammarState(runner, format),
    });
    const generation: Generation = {
      tokens,
      completion,
      finishReason: undefined,
      take(token) {
        if (model.isEogToken(token) || stopTokens.has(token)) {
          generation.finishReason = 'stop';
          return '';
        }
        stats.generatedTokens++;
        const text = completion.push(token);
        if (completion.stopped) generation.finishReason = 'stop';
        else if (completion.tokens.length >= req.maxTokens) generation.finishReason = 'length';
        return text;
      },
      end() {
        const tail = completion.finish();
        // max_tokens ran out in the grammar's closing newlines: the value is whole.
        if (completion.ended) generation.finishReason = 'stop';
        return tail;
      },
      usage: () => {
        const completionTokens = completion.tokens.length - completion.tailTokens;
        return { promptTokens: prompt.length, completionTokens, totalTokens: prompt.length + completionTokens };
      },
    };
    return generation;
  }

  // ---- embeddings, rerank and moderation (./embeddings.ts, ./moderation.ts) ----

  async embed(input: string[], signal: AbortSignal): Promise<EngineEmbedResult> {
    return this.within(signal, async (s) => embedOn(await this.runnerOf('embedding'), this.modelId, input, s));
  }

  async rerank(query: string, documents: string[], signal: AbortSignal): Promise<EngineRerankResult> {
    return this.within(signal, async (s) => rerankOn(await this.runnerOf('reranking'), this.modelId, query, documents, s));
  }

  async moderate(inputs: string[], signal: AbortSignal): Promise<EngineModerationResult[]> {
    return this.within(signal, async (s) => {
      if (s.aborted) throw abortReason(s);
      const runner = await this.runnerOf('chat');
      const results: EngineModerationResult[] = [];
      for (const input of inputs) results.push(await moderateOn(runner, this.modelId, input, s, this.stats));
      return results;
    });
  }

  async close(): Promise<void> {
    const runner = this.runner;
    this.statusValue = 'closed';
    this.runner = undefined;
    if (!runner) return;
    runner.pool.rejectWaiting(new DomainError('shutting_down', 'The server is shutting down.'));
    await runner.model.dispose().catch(() => {});
  }
}
