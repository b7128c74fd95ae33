// The operator CLI's model commands:
//   tollgate models pull <hf:owner/repo/file.gguf | https URL> [--out FILE]   into MODELS_DIR (./models)
//   tollgate models pull --defaults      every in-process model of the config (CONFIG) that has a source
//   tollgate models fixtures --out DIR   the project's tiny random-weight models and a config serving them
// Downloads show a progress bar (cli-progress) on a terminal, resume an interrupted download and
// check the size (src/domain/inference/llamacpp/downloader.ts).
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import cliProgress from 'cli-progress';
import { loadConfig, type ModelConfig } from './config.js';
import { DomainError } from './domain/errors.js';
import { PullError, PullFileNameError, pullModel, type PullResult } from './domain/inference/llamacpp/downloader.js';
import { FIXTURES, writeFixtures } from './fixtures/gguf-fixtures.js';
import type { LlamaCppModel } from './domain/inference/llamacpp/llamacpp-engine.js';
import { huggingFaceEndpoint, modelsDir } from './domain/inference/llamacpp/model-files.js';

/** What the model commands need from the CLI (a subset of its CliContext). */
export interface ModelsCliContext {
  env: NodeJS.ProcessEnv;
  print(text: string): void;
  printJson(value: unknown): void;
  /** Progress and notes go to stderr, so that --json output stays one clean line. */
  stderr(text: string): void;
}

function inProcessModels(models: ModelConfig[]): LlamaCppModel[] {
  return models.filter((m) => m.engine.type === 'llamacpp') as LlamaCppModel[];
}

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

/** A progress bar on a terminal; a line per quarter otherwise (logs, CI). */
function progressReporter(ctx: ModelsCliContext, label: string) {
  const tty = process.stderr.isTTY === true && ctx.env.TOLLGATE_PROGRESS !== 'lines';
  let bar: cliProgress.SingleBar | undefined;
  let quarter = -1;
  return {
    start(total: number | null, resumedFrom: number) {
      if (resumedFrom > 0) ctx.stderr(`${label}: resuming at ${mb(resumedFrom)}\n`);
      if (tty && total) {
        bar = new cliProgress.SingleBar(
          {
            format: `${label} [{bar}] {percentage}% | {value_mb}/{total_mb} MB | ETA {eta_formatted}`,
            hideCursor: true,
            stream: process.stderr,
          },
          cliProgress.Presets.shades_classic,
        );
        bar.start(total, resumedFrom, { value_mb: (resumedFrom / 1048576).toFixed(1), total_mb: (total / 1048576).toFixed(1) });
      }
    },
    update(received: number, total: number | null) {
      if (bar) {
        bar.update(received, { value_mb: (received / 1048576).toFixed(1) });
        return;
      }
      if (!total) return;
      const q = Math.floor((received / total) * 4);
      if (q > quarter) {
        quarter = q;
        ctx.stderr(`${label}: ${Math.min(100, q * 25)}% (${mb(received)} of ${mb(total)})\n`);
      }
    },
    stop() {
      bar?.stop();
    },
  };
}

async function pullOne(ctx: ModelsCliContext, source: string, out: string | undefined, label: string): Promise<PullResult> {
  const progress = progressReporter(ctx, label);
  // Ctrl-C: the bar gives the terminal its cursor back, and the person learns the part is kept.
  const interrupted = () => {
    progress.stop();
    ctx.stderr(
      `\n${label}: interrupted; what was downloaded is kept, and the same command resumes it if the server named the file's version (an ETag or Last-Modified), else starts it over\n`,
    );
    process.exit(130);
  };
  process.once('SIGINT', interrupted);
  try {
    return await pullModel({
      source,
      out,
      modelsDir: modelsDir(ctx.env),
      env: ctx.env,
      onStart: ({ total, resumedFrom }) => progress.start(total, resumedFrom),
      onProgress: ({ received, total }) => progress.update(received, total),
    });
  } finally {
    process.off('SIGINT', interrupted);
    progress.stop();
  }
}

/** What to try when a download fails: a proxy, a mirror, or the offline fixtures. */
function pullHints(env: NodeJS.ProcessEnv): string {
  const proxy = env.HTTPS_PROXY || env.https_proxy || env.HTTP_PROXY || env.http_proxy;
  return [
    '',
    proxy
      ? `  The proxy in HTTPS_PROXY/HTTP_PROXY (${proxy}) was used.`
      : '  Behind a proxy? Set HTTPS_PROXY (e.g. HTTPS_PROXY=http://proxy:3128).',
    `  A Hugging Face mirror: set HF_ENDPOINT (now ${huggingFaceEndpoint(env)}).`,
    '  No network? Run on the tiny offline models: npx tollgate models fixtures --out fixtures && CONFIG=fixtures/tollgate.yaml npm start',
  ].join('\n');
}

function describe(r: PullResult): string {
  return r.alreadyThere
    ? `${r.file} is already there (${mb(r.bytes)}).`
    : `Saved ${r.file} (${mb(r.bytes)}${r.resumedFrom > 0 ? `, resumed at ${mb(r.resumedFrom)}` : ''}).`;
}

const pullResultJson = (r: PullResult) => ({ file: r.file, bytes: r.bytes, resumed_from: r.resumedFrom, already_there: r.alreadyThere });

/**
 * The ids of the offline catalog: the same as config/default.yaml's, so that every README example
 * runs unchanged on the tiny models (`npx tollgate models fixtures`) and on the real ones.
 */
export const FIXTURE_MODEL_IDS = {
  chat: 'chat-fast',
  embedding: 'embed-small',
  reranking: 'rerank-base',
  moderation: 'guard-mini',
} as const;

/** The catalog that serves the fixtures, for `models fixtures`. */
export function fixturesConfigYaml(files: ReturnType<typeof writeFixtures>): string {
  const common = `owned_by: tollgate\n    created: 1735689600\n    version: "fixture"\n    status: beta`;
  const engine = (file: string) => `{ type: llamacpp, file: ${JSON.stringify(file)}, threads: 1 }`;
  const ids = FIXTURE_MODEL_IDS;
  return `# tollgate serving the project's tiny random-weight GGUF models (made by \`npx tollgate models fixtures\`).
# Their text is gibberish: they exist to run the whole service offline, under the ids of
# config/default.yaml. Use: CONFIG=<this file> npm start
#
# Prices are high enough to see (24 prompt and 64 answer tokens cost 0.000304 USD), and the developer tier has
# no monthly allocation here, so its usage is paid from the wallet and shows as \`usage\`
# transactions at once. Credit the wallet first (a sandbox top-up, or \`npx tollgate wallet credit\`).
tiers:
  developer: { monthly_tokens: 0 }
models:
  - id: ${ids.chat}
    category: chat
    ${common}
    capabilities: { chat_completion: true, streaming: true, function_calling: true }
    pricing: { input_price_per_million: 2, output_price_per_million: 4, currency: usd }
    specifications: { context_window: 1024, max_output_tokens: 256, training_cutoff: "2025-01" }
    engine: ${engine(files.chat)}
  - id: ${ids.embedding}
    category: embedding
    ${common}
    capabilities: { embeddings: true }
    pricing: { price_per_million_tokens: 1, currency: usd }
    specifications: { max_tokens: ${FIXTURES.embedding.contextLength}, output_dimensions: ${FIXTURES.embedding.dimensions} }
    engine: ${engine(files.embedding)}
  - id: ${ids.reranking}
    category: reranking
    ${common}
    capabilities: { rerank: true }
    pricing: { price_per_million_tokens: 1, currency: usd }
    specifications: { max_tokens: ${FIXTURES.reranker.contextLength} }
    engine: ${engine(files.reranker)}
  - id: ${ids.moderation}
    category: moderation
    ${common}
    capabilities: { moderation: true }
    pricing: { price_per_million_tokens: 1, currency: usd }
    specifications: { max_tokens: 512 }
    engine: ${engine(files.guard)}
`;
}

export function registerModelCommands(program: Command, ctx: ModelsCliContext): void {
  const models = program.command('models').description('Fetch GGUF model files for in-process (llama.cpp) models');

  models
    .command('pull')
    .description('Download a GGUF file into MODELS_DIR (default ./models), resuming an interrupted download')
    .argument('[source]', 'hf:owner/repo/file.gguf or an https URL')
    .option(
      '--out <file>',
      'save as this path (or into this folder: an existing one, or one ending in /, made if missing) instead of MODELS_DIR/<file name>',
    )
    .option('--defaults', 'fetch every in-process model of the config (CONFIG, default config/default.yaml) that names a source')
    .option('--json', 'print JSON')
    .action(async (source: string | undefined, opts: { out?: string; defaults?: boolean; json?: boolean }) => {
      if (opts.defaults) {
        if (source || opts.out)
          throw new DomainError('invalid_value', '--defaults takes no source and no --out: each model is saved as its config `file`.');
        const wanted = inProcessModels(loadConfig(ctx.env, { payments: false }).models).filter((m) => m.engine.source);
        if (wanted.length === 0) {
          if (opts.json) ctx.printJson([]);
          else ctx.print('The config has no in-process model with a source to pull.');
          return;
        }
        // One entry per model, in config order: what was saved, or why it was not (with --json, all
        // of them are printed, failures included, before the command fails).
        const results: Record<string, unknown>[] = [];
        const failed: string[] = [];
        // Every model is tried: one that cannot be fetched is named with its file, the others still come.
        for (const m of wanted) {
          try {
            const r = await pullOne(ctx, m.engine.source!, m.engine.file, m.id);
            results.push({ model: m.id, ...pullResultJson(r) });
            if (!opts.json) ctx.print(`${m.id}: ${describe(r)}`);
          } catch (e) {
            if (!(e instanceof PullError)) throw e;
            failed.push(m.id);
            results.push({ model: m.id, file: m.engine.file, source: m.engine.source, error: e.message });
            ctx.stderr(`model "${m.id}": cannot pull ${m.engine.source} into ${m.engine.file}: ${e.message}\n`);
          }
        }
        if (opts.json) ctx.printJson(results);
        if (failed.length > 0)
          throw new PullError(
            `${failed.length} of ${wanted.length} models could not be pulled (${failed.join(', ')}).${pullHints(ctx.env)}`,
          );
        return;
      }
      if (!source)
        throw new DomainError('missing_required_parameter', 'Give a source (hf:owner/repo/file.gguf or an https URL), or --defaults.');
      const r = await pullOne(ctx, source, opts.out, path.basename(opts.out ?? source)).catch((e: unknown) => {
        // A file name that cannot be used is the command's to fix: the network hints do not apply.
        if (e instanceof PullFileNameError) throw new PullError(`cannot pull ${source}: ${e.message}.`);
        throw e instanceof PullError ? new PullError(`cannot pull ${source}: ${e.message}.${pullHints(ctx.env)}`) : e;
      });
      if (opts.json) ctx.printJson(pullResultJson(r));
      else ctx.print(describe(r));
    });

  models
    .command('fixtures')
    .description("Write the project's tiny random-weight GGUF models and a config serving them (offline use, tests)")
    .requiredOption('--out <dir>', 'directory to write into')
    .option('--json', 'print JSON')
    .action((opts: { out: string; json?: boolean }) => {
      const dir = path.resolve(opts.out);
      const files = writeFixtures(dir);
      const config = path.join(dir, 'tollgate.yaml');
      if (!existsSync(config)) writeFileSync(config, fixturesConfigYaml(files));
      if (opts.json) {
        ctx.printJson({ ...files, config });
        return;
      }
      ctx.print([...Object.values(files).map((f) => `Wrote ${f}`), `Serve them with: CONFIG=${config} npm start`].join('\n'));
    });
}
