// Downloads a model file (`npx tollgate models pull`): into `<target>.part` first, resuming an
// interrupted download with a Range request, then the size is checked against what the server
// announced and the file must start with the GGUF magic before it is renamed into place. A file
// already there with the announced size is left alone.
//
// A part is resumed only when it is known to be the start of the same file: `<target>.part.json`
// keeps the URL and the validator (ETag, else Last-Modified) of the response it began with, and
// the resume sends it as If-Range, so a file that changed since comes whole (200) and the download
// starts over instead of stitching two versions together. Hugging Face's SHA-256 of an LFS file
// (X-Linked-Etag on its resolve URL) is checked at the end when the source is on HF_ENDPOINT.
import { createHash } from 'node:crypto';
import {
  closeSync,
  createReadStream,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import path from 'node:path';
import { EnvHttpProxyAgent, fetch as undiciFetch, type Dispatcher, type Response } from 'undici';
import { huggingFaceEndpoint, parseModelSource } from './model-files.js';
import { makeFolder } from '../../../make-folder.js';

export interface PullProgress {
  received: number;
  /** Total size when the server announced it. */
  total: number | null;
  /** Bytes that were already there (a resumed download). */
  resumedFrom: number;
}

export interface PullOptions {
  /** `hf:owner/repo/file.gguf` or an http(s) URL. */
  source: string;
  /** Directory for downloads when `out` is not given. */
  modelsDir: string;
  /** Exact destination path. */
  out?: string;
  env?: NodeJS.ProcessEnv;
  signal?: AbortSignal;
  onStart?(info: { url: string; file: string; total: number | null; resumedFrom: number }): void;
  onProgress?(p: PullProgress): void;
}

export interface PullResult {
  file: string;
  bytes: number;
  /** Bytes reused from an interrupted download. */
  resumedFrom: number;
  /** The file was already complete: nothing was downloaded. */
  alreadyThere: boolean;
}

export class PullError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PullError';
  }
}

/** The source's own file name cannot be used (`..%2F`, malformed percent-encoding…): nothing was fetched; `--out FILE` names one. */
export class PullFileNameError extends PullError {
  constructor(message: string) {
    super(message);
    this.name = 'PullFileNameError';
  }
}

/** What a `.part` is the start of, kept beside it as `<target>.part.json`. */
interface PartRecord {
  url: string;
  /** The strong ETag of the response the part began with; else its Last-Modified. */
  etag?: string;
  lastModified?: string;
  total: number | null;
}

/** A response's validator for If-Range: a strong ETag (RFC 9110 forbids weak ones there), else Last-Modified. */
function validatorOf(res: Response): Pick<PartRecord, 'etag' | 'lastModified'> | null {
  const etag = res.headers.get('etag');
  if (etag && !etag.startsWith('W/')) return { etag };
  const lastModified = res.headers.get('last-modified');
  return lastModified ? { lastModified } : null;
}

function readPartRecord(file: string): PartRecord | null {
  try {
    const r = JSON.parse(readFileSync(file, 'utf8')) as Partial<PartRecord>;
    if (typeof r.url !== 'string' || (typeof r.etag !== 'string' && typeof r.lastModified !== 'string')) return null;
    return { url: r.url, etag: r.etag, lastModified: r.lastModified, total: typeof r.total === 'number' ? r.total : null };
  } catch {
    return null; // none (a part from before these records), or unreadable: not resumable
  }
}

/**
 * Whether a 206 continues the part: it starts at the part's end, and its validator and total are
 * the recorded ones. If-Range already asks the server for this; a server that honours Range but
 * not If-Range is caught here when it names the version it sent.
 */
function continuesPart(res: Response, offset: number, record: PartRecord): boolean {
  const range = /^bytes (\d+)-\d+\/(\d+|\*)$/.exec(res.headers.get('content-range')?.trim() ?? '');
  if (!range || Number(range[1]) !== offset) return false;
  if (record.total !== null && range[2] !== '*' && Number(range[2]) !== record.total) return false;
  const etag = res.headers.get('etag');
  if (record.etag !== undefined && etag !== null && etag !== record.etag) return false;
  const lastModified = res.headers.get('last-modified');
  if (record.etag === undefined && lastModified !== null && lastModified !== record.lastModified) return false;
  return true;
}

/** Hugging Face's SHA-256 of an LFS file, from X-Linked-Etag; a small (non-LFS) file's is a 40-hex git hash, not one. */
function linkedSha256(res: Response): string | null {
  const m = /^"?([0-9a-f]{64})"?$/i.exec(res.headers.get('x-linked-etag')?.trim() ?? '');
  return m ? m[1]!.toLowerCase() : null;
}

async function sha256Of(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

function authHeaders(url: string, env: NodeJS.ProcessEnv): Record<string, string> {
  // Gated Hugging Face repositories (Llama Guard, for one) need an access token; fetch drops it on
  // the redirect to the CDN, which is another origin.
  const token = env.HF_TOKEN || env.HUGGING_FACE_HUB_TOKEN;
  return token && new URL(url).host === new URL(huggingFaceEndpoint(env)).host ? { authorization: `Bearer ${token}` } : {};
}

/** The proxy variables curl and pip read (HTTPS_PROXY, HTTP_PROXY, NO_PROXY, also lower case); undefined without any. */
export function proxyDispatcher(env: NodeJS.ProcessEnv): Dispatcher | undefined {
  const httpsProxy = env.HTTPS_PROXY || env.https_proxy;
  const httpProxy = env.HTTP_PROXY || env.http_proxy;
  if (!httpsProxy && !httpProxy) return undefined;
  return new EnvHttpProxyAgent({
    httpsProxy: httpsProxy || httpProxy,
    httpProxy: httpProxy || httpsProxy,
    noProxy: env.NO_PROXY ?? env.no_proxy ?? '',
  });
}

function viaProxy(env: NodeJS.ProcessEnv): string {
  const proxy = env.HTTPS_PROXY || env.https_proxy || env.HTTP_PROXY || env.http_proxy;
  if (!proxy) return '';
  try {
    return ` through the proxy ${new URL(proxy).host}`;
  } catch {
    return ` through the proxy ${proxy}`;
  }
}

/** The total size a response announces: Content-Range's "/total", else Content-Length (+ the resumed offset). */
function announcedTotal(res: Response, offset: number): number | null {
  const range = res.headers.get('content-range');
  const m = range ? /\/(\d+)\s*$/.exec(range) : null;
  if (m) return Number(m[1]);
  const length = res.headers.get('content-length');
  return length !== null && /^\d+$/.test(length) ? Number(length) + offset : null;
}

function startsWithGgufMagic(file: string): boolean {
  const fd = openSync(file, 'r');
  try {
    const head = Buffer.alloc(4);
    return readSync(fd, head, 0, 4, 0) === 4 && head.toString('latin1') === 'GGUF';
  } finally {
    closeSync(fd);
  }
}

function describeFetchError(e: unknown): string {
  const err = e as Error & { cause?: { code?: string; message?: string } };
  return err.cause?.code ?? err.cause?.message ?? err.message;
}

/**
 * Where the download is saved: `--out FILE` as given; otherwise the source's own file name in the
 * models folder (or in the folder `--out` names), which must be a plain name that stays inside it.
 */
function targetPath(opts: PullOptions, source: ReturnType<typeof parseModelSource>): string {
  // --out naming an existing folder, or ending in a slash (a folder, made if missing), is the
  // folder to save into (not a file name to rename onto).
  const isFolder = (out: string) => out.endsWith('/') || out.endsWith(path.sep) || (existsSync(out) && statSync(out).isDirectory());
  const folder = opts.out === undefined ? opts.modelsDir : isFolder(opts.out) ? opts.out : undefined;
  if (folder === undefined) return path.resolve(opts.out!);
  if (source.fileName === undefined) {
    throw new PullFileNameError(`${source.fileNameProblem}: give the file to save it as with --out FILE`);
  }
  const dir = path.resolve(folder);
  const target = path.resolve(dir, source.fileName);
  // fileNameProblem() already refuses separators and `..`; this is the guarantee, whatever a name holds.
  const inside = path.relative(dir, target);
  if (inside === '' || inside === '..' || path.isAbsolute(inside) || path.dirname(inside) !== '.') {
    throw new PullFileNameError(
      `its file name ${JSON.stringify(source.fileName)} leads outside ${dir}: give the file to save it as with --out FILE`,
    );
  }
  return target;
}

export async function pullModel(opts: PullOptions): Promise<PullResult> {
  const env = opts.env ?? process.env;
  const source = parseModelSource(opts.source, env);
  const target = targetPath(opts, source);
  const partial = `${target}.part`;
  const partRecord = `${partial}.json`;
  makeFolder(path.dirname(target));
  const headers = authHeaders(source.url, env);
  const dispatcher = proxyDispatcher(env);

  const request = async (extra: Record<string, string>, method = 'GET', redirect: 'follow' | 'manual' = 'follow'): Promise<Response> => {
    try {
      return await undiciFetch(source.url, {
        method,
        headers: { ...headers, ...extra },
        redirect,
        signal: opts.signal,
        dispatcher,
      });
    } catch (e) {
      if (opts.signal?.aborted) throw e;
      throw new PullError(`cannot reach ${new URL(source.url).origin}${viaProxy(env)}: ${describeFetchError(e)}`);
    }
  };
  const httpError = async (res: Response) => {
    await res.body?.cancel();
    const hint =
      res.status === 401 || res.status === 403 ? ' (a gated repository: accept its licence on huggingface.co and set HF_TOKEN)' : '';
    return new PullError(`${source.url} answered HTTP ${res.status}${hint}`);
  };

  if (existsSync(target)) {
    const size = statSync(target).size;
    const head = await request({}, 'HEAD');
    const total = head.ok ? announcedTotal(head, 0) : null;
    await head.body?.cancel();
    if (total === null || total === size) return { file: target, bytes: size, resumedFrom: size, alreadyThere: true };
    // A different size: the file there is stale or broken; download it again.
  }

  // Hugging Face answers its resolve URL with a redirect to its CDN that carries the file's SHA-256;
  // fetch's own redirect-following would hide it, so one HEAD looks at that first answer.
  let expectedSha256: string | null = null;
  if (new URL(source.url).origin === new URL(huggingFaceEndpoint(env)).origin) {
    const head = await request({}, 'HEAD', 'manual');
    await head.body?.cancel();
    expectedSha256 = linkedSha256(head);
  }

  // A part is resumed only with a record of what it is the start of (the same URL, and a validator).
  const record = existsSync(partial) ? readPartRecord(partRecord) : null;
  let offset = record !== null && record.url === source.url ? statSync(partial).size : 0;
  let res = await request(offset > 0 ? { range: `bytes=${offset}-`, 'if-range': (record!.etag ?? record!.lastModified)! } : {});
  if (offset > 0 && res.status === 416) {
    // Nothing left to fetch, or the part is bigger than the file: learn the size and decide.
    const total = announcedTotal(res, 0);
    await res.body?.cancel();
    if (total !== null && total === offset && (record!.total === null || record!.total === total)) {
      return finish(target, partial, offset, offset, total, expectedSha256, source.url);
    }
    offset = 0;
    res = await request({});
  } else if (offset > 0 && res.status === 206 && !continuesPart(res, offset, record!)) {
    // The server sent the rest of another version (it ignored If-Range): start over.
    await res.body?.cancel();
    offset = 0;
    res = await request({});
  }
  if (!res.ok) throw await httpError(res);
  // A 200 to a resume: the file changed since the part began (If-Range), or the server ignores
  // Range. Either way this response is the whole file, from its first byte.
  if (offset > 0 && res.status !== 206) offset = 0;
  const total = announcedTotal(res, offset);
  if (!res.body) throw new PullError(`${source.url} sent no body`);

  // Each chunk is written before the next is read, synchronously: undici 7's HTTP/1 parser
  // (nodejs/undici#5360; fixed in undici 8, which needs Node 22) asserts in a socket's 'end'
  // handler when a server closes the connection (Connection: close, HTTP/1.0 mirrors) while the
  // body is paused waiting for its reader across an event-loop turn, an exception nothing can
  // catch. Read this way, the body never waits across one (the disk's pace reaches the server
  // through TCP instead).
  let received = offset;
  const writeError = (e: unknown) => {
    const err = e as NodeJS.ErrnoException;
    // The disk, not the network: running the command again does not help.
    return new PullError(`cannot write ${partial} (${err.code ?? err.message}): free some space, or choose another --out or MODELS_DIR`);
  };
  // Starting over: the part is emptied first, then its record written, so that a part is never
  // paired with the record of another response.
  const validator = offset > 0 ? record : validatorOf(res);
  let fd: number;
  try {
    fd = openSync(partial, offset > 0 ? 'a' : 'w');
    if (offset === 0) {
      if (validator) writeFileSync(partRecord, `${JSON.stringify({ url: source.url, ...validator, total } satisfies PartRecord)}\n`);
      else rmSync(partRecord, { force: true });
    }
  } catch (e) {
    await res.body.cancel();
    throw writeError(e);
  }
  opts.onStart?.({ url: source.url, file: target, total, resumedFrom: offset });
  try {
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      try {
        writeSync(fd, chunk);
      } catch (e) {
        throw writeError(e);
      }
      received += chunk.length;
      opts.onProgress?.({ received, total, resumedFrom: offset });
    }
  } catch (e) {
    if (e instanceof PullError || opts.signal?.aborted) throw e;
    const again = validator
      ? 'run the same command again to resume'
      : 'run the same command again to start over (the server names no version of the file, ETag or Last-Modified, to resume against)';
    throw new PullError(`the download of ${source.url} broke off after ${received} bytes (${describeFetchError(e)}); ${again}`);
  } finally {
    closeSync(fd);
  }
  return finish(target, partial, offset, statSync(partial).size, total, expectedSha256, source.url);
}

async function finish(
  target: string,
  partial: string,
  resumedFrom: number,
  size: number,
  total: number | null,
  expectedSha256: string | null,
  url: string,
): Promise<PullResult> {
  if (total !== null && size !== total) {
    throw new PullError(
      `size check failed for ${partial}: ${size} bytes, the server announced ${total}; run the same command again to resume`,
    );
  }
  const discard = () => {
    unlinkSync(partial);
    rmSync(`${partial}.json`, { force: true });
  };
  if (!startsWithGgufMagic(partial)) {
    // Often an HTML page (a login or error page): nothing worth resuming.
    discard();
    throw new PullError(`the download is not a GGUF file (no "GGUF" magic at its start); check the source`);
  }
  if (expectedSha256 !== null) {
    const actual = await sha256Of(partial);
    if (actual !== expectedSha256) {
      discard();
      throw new PullError(
        `the download of ${url} has SHA-256 ${actual}, not the ${expectedSha256} Hugging Face publishes for it (X-Linked-Etag): it changed during the download or was damaged on the way; it was removed, run the same command again`,
      );
    }
  }
  renameSync(partial, target);
  rmSync(`${partial}.json`, { force: true });
  return { file: target, bytes: size, resumedFrom, alreadyThere: false };
}
