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
  /** The file name the download is saved under by default; absent when the source's is not a plain file name. */
  fileName?: string;
  /** Why the source's last segment cannot be the file name (then only `--out FILE` saves it). */
  fileNameProblem?: string;
}

/**
 * The longest file name accepted, in UTF-8 bytes: 255 (what ext4, APFS, NTFS and most others take)
 * less the `.part` the download goes to first.
 */
export const MAX_FILE_NAME_BYTES = 250;

/** Control characters (NUL, line breaks), formatting ones (bidirectional overrides), lone surrogates. */
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}]/u;
const INVISIBLE_G = new RegExp(INVISIBLE.source, 'gu');

/**
 * Why `name` cannot be a file name inside the models folder, or undefined when it can: the name
 * comes from a URL (percent-decoded) or an hf: source, and `..%2F..%2Fx.gguf` must not save two
 * folders up. A plain name has no separator, is not `.` or `..`, has no control or invisible
 * formatting characters (NUL, line breaks, bidirectional overrides) and fits a file system.
 */
export function fileNameProblem(name: string): string | undefined {
  if (name === '') return 'the source does not end with a file name';
  // Quoted for a one-line message; invisible characters (a bidirectional override would reorder it) spelled out.
  const quoted = JSON.stringify(name).replace(INVISIBLE_G, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  if (name === '.' || name === '..') return `its file name ${quoted} names a folder`;
  if (/[/\\]/.test(name)) return `its file name ${quoted} contains a path separator`;
  if (INVISIBLE.test(name)) return `its file name ${quoted} contains a control character`;
  const bytes = Buffer.byteLength(name, 'utf8');
  if (bytes > MAX_FILE_NAME_BYTES) return `its file name is ${bytes} bytes long, more than the ${MAX_FILE_NAME_BYTES} allowed`;
  return undefined;
}

function withFileName(spec: string, url: string, name: string, problem = fileNameProblem(name)): ModelSource {
  return problem === undefined ? { spec, url, fileName: name } : { spec, url, fileNameProblem: problem };
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
    return withFileName(spec, url, path.posix.basename(filePath));
  }
  let url: URL;
  try {
    url = new URL(spec);
  } catch {
    throw new Error(`"${spec}" is neither hf:owner/repo/file.gguf nor an http(s) URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error(`"${spec}": only https (or http) URLs can be pulled`);
  // basename() would take `models` out of `…/models/`: a URL ending in / names no file.
  const last = url.pathname.endsWith('/') ? '' : path.posix.basename(url.pathname);
  let name: string;
  try {
    name = decodeURIComponent(last);
  } catch {
    // URIError "URI malformed": a % not followed by two hex digits, or bytes that are not UTF-8.
    return withFileName(spec, url.toString(), last, `its file name ${JSON.stringify(last)} is not valid percent-encoding`);
  }
  return withFileName(spec, url.toString(), name);
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
