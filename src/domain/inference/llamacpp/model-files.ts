// Where in-process model files live and how to fetch a missing one. A catalog's `engine.file` is a
// path (relative ones from the working directory, like `models/NAME.gguf`); `engine.source` says
// where it comes from (`hf:owner/repo/file.gguf` or an https URL). `npx tollgate models pull`
// downloads into MODELS_DIR (default ./models).
import path from 'node:path';

export const DEFAULT_MODELS_DIR = 'models';

export function modelsDir(env: NodeJS.ProcessEnv = process.env): string {
  return path.resolve(env.MODELS_DIR || DEFAULT_MODELS_DIR);
}

export function resolveModelFile(file: string): string {
  return path.resolve(file);
}

export interface ModelSource {
  /** What the user wrote. */
  spec: string;
  url: string;
  /** The file name the download is saved under by default. */
  fileName: string;
}

/** Hugging Face, or the mirror HF_ENDPOINT names (the variable huggingface_hub reads too). */
export function huggingFaceEndpoint(env: NodeJS.ProcessEnv = process.env): string {
  return (env.HF_ENDPOINT || 'https://huggingface.co').replace(/\/+$/, '');
}

/**
 * `hf:owner/repo/path/file.gguf` (the main branch; `hf:owner/repo@rev/file.gguf` for another
 * revision) becomes Hugging Face's resolve URL (on HF_ENDPOINT when set); an https URL is taken
 * as it is.
 */
export function parseModelSource(spec: string, env: NodeJS.ProcessEnv = process.env): ModelSource {
  if (spec.startsWith('hf:')) {
    const rest = spec.slice(3).replace(/^\/+/, '');
    const parts = rest.split('/');
    if (parts.length < 3 || parts.some((p) => p.length === 0)) {
      throw new Error(`"${spec}" is not a Hugging Face source: expected hf:owner/repo/file.gguf`);
    }
    const [owner, repoWithRev, ...fileParts] = parts as [string, string, ...string[]];
    const [repo, revision = 'main'] = repoWithRev.split('@') as [string, string?];
    const filePath = fileParts.join('/');
    const url = `${huggingFaceEndpoint(env)}/${owner}/${repo}/resolve/${encodeURIComponent(revision)}/${fileParts.map(encodeURIComponent).join('/')}`;
    return { spec, url, fileName: path.posix.basename(filePath) };
  }
  let url: URL;
  try {
    url = new URL(spec);
  } catch {
    throw new Error(`"${spec}" is neither hf:owner/repo/file.gguf nor an http(s) URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error(`"${spec}": only https (or http) URLs can be pulled`);
  const fileName = decodeURIComponent(path.posix.basename(url.pathname));
  if (!fileName) throw new Error(`"${spec}": the URL does not end with a file name`);
  return { spec, url: url.toString(), fileName };
}

/** The command that fetches a catalog model's file, for start-up messages. */
export function pullCommandFor(engine: { file: string; source?: string }, env: NodeJS.ProcessEnv = process.env): string {
  const target = resolveModelFile(engine.file);
  if (!engine.source) return `npx tollgate models pull <hf:owner/repo/file.gguf | https URL> --out ${engine.file}`;
  let fileName: string | undefined;
  try {
    fileName = parseModelSource(engine.source).fileName;
  } catch {
    fileName = undefined;
  }
  const lands = fileName !== undefined && path.join(modelsDir(env), fileName) === target;
  return lands ? `npx tollgate models pull ${engine.source}` : `npx tollgate models pull ${engine.source} --out ${engine.file}`;
}
