// `models pull`'s downloader against a loopback HTTP server (nothing else is reachable here): a
// whole download, an interrupted one resumed with Range (and If-Range, so that a file that changed
// in between is not stitched together), the size and checksum checks, and sources and the file
// names they give.
import { createHash } from 'node:crypto';
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli } from './support/cli.js';
import { pullModel, PullError, PullFileNameError, type PullProgress } from '../src/domain/inference/llamacpp/downloader.js';
import { chatFixtureSpec } from '../src/fixtures/gguf-fixtures.js';
import { writeGguf } from '../src/fixtures/gguf-writer.js';
import { fileNameProblem, parseModelSource, pullCommandFor } from '../src/domain/inference/llamacpp/model-files.js';

const model = writeGguf(chatFixtureSpec());
/** Another version of the same file: as long, the same first bytes (the GGUF header), other weights. */
const modelV2 = Buffer.from(model).fill(9, 1024);
/** A file large enough that a slow reader falls behind the socket (the GGUF magic first). */
const big = Buffer.concat([model, Buffer.alloc(40 * 1024 * 1024, 7)]);
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');
let server: Server;
let base: string;
const seen: { path: string; range?: string; ifRange?: string }[] = [];
/** Per path: the next full GET sends this many bytes of the file, then the connection breaks. */
const cutNext = new Map<string, number>();
/** Per path under /versioned/: the file served now, and the validator it is served with. */
const versioned = new Map<string, { body: Buffer; etag?: string; lastModified?: string; ifRange: 'honour' | 'ignore' }>();

interface SendOptions {
  ignoreRange?: boolean;
  announce?: number;
  /** What the server names the version by; default a strong ETag of the body. `none`: no validator at all. */
  etag?: string | 'none';
  lastModified?: string;
  /** Range is answered even when If-Range names another version (a server that does not know If-Range). */
  ignoreIfRange?: boolean;
}

function send(req: IncomingMessage, res: ServerResponse, body: Buffer, opts: SendOptions = {}) {
  const validators: Record<string, string> = {};
  const etag = opts.etag ?? `"${sha256(body).slice(0, 16)}"`;
  if (etag !== 'none') validators.etag = etag;
  if (opts.lastModified) validators['last-modified'] = opts.lastModified;
  const cut = req.method === 'GET' && !req.headers.range ? cutNext.get(new URL(req.url!, 'http://x').pathname) : undefined;
  if (cut !== undefined) {
    cutNext.delete(new URL(req.url!, 'http://x').pathname);
    res.writeHead(200, { 'content-length': body.length, ...validators });
    res.write(body.subarray(0, cut), () => setTimeout(() => res.socket?.destroy(), 20));
    return;
  }
  const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
  const ifRange = req.headers['if-range'];
  // RFC 9110 13.1.5: an If-Range that names another version asks for the whole file instead.
  const sameVersion = ifRange === undefined || opts.ignoreIfRange || ifRange === validators.etag || ifRange === validators['last-modified'];
  if (range && !opts.ignoreRange && sameVersion) {
    const start = Number(range[1]);
    if (start >= body.length) {
      res.writeHead(416, { 'content-range': `bytes */${body.length}` }).end();
      return;
    }
    res.writeHead(206, {
      'content-range': `bytes ${start}-${body.length - 1}/${body.length}`,
      'content-length': body.length - start,
      ...validators,
    });
    if (req.method === 'HEAD') return res.end();
    res.end(body.subarray(start));
    return;
  }
  res.writeHead(200, { 'content-length': opts.announce ?? body.length, 'accept-ranges': 'bytes', ...validators });
  if (req.method === 'HEAD') return res.end();
  res.end(body);
}

beforeAll(async () => {
  server = createServer((req, res) => {
    const url = new URL(req.url!, 'http://x');
    seen.push({ path: url.pathname, range: req.headers.range, ifRange: req.headers['if-range'] as string | undefined });
    const version = versioned.get(url.pathname);
    if (version) {
      const { body, etag = 'none', lastModified, ifRange } = version;
      return send(req, res, body, { etag, lastModified, ignoreIfRange: ifRange === 'ignore' });
    }
    // Any file name at all, `..%2F` and malformed percent-encoding included.
    if (url.pathname.startsWith('/any/')) return send(req, res, model);
    // A Hugging Face mirror (HF_ENDPOINT=base/hf): the resolve URL redirects to a CDN and gives the
    // file's SHA-256 in X-Linked-Etag (good), a wrong one (bad), or a git hash of 40 hex (small).
    const hf = /^\/hf\/acme\/repo\/resolve\/main\/(good|bad|small)\.gguf$/.exec(url.pathname);
    if (hf) {
      const linked = { good: sha256(model), bad: sha256(modelV2), small: 'a'.repeat(40) }[hf[1] as 'good' | 'bad' | 'small'];
      res.writeHead(302, { location: '/cdn/blob', 'x-linked-etag': `"${linked}"`, etag: `"${linked}"` }).end();
      return;
    }
    switch (url.pathname) {
      case '/cdn/blob':
      case '/models/tiny.gguf':
      case '/models/cut.gguf':
        return send(req, res, model);
      case '/models/no-range.gguf':
        return send(req, res, model, { ignoreRange: true });
      case '/models/no-validator.gguf':
        return send(req, res, model, { etag: 'none' });
      case '/models/page.gguf':
        return send(req, res, Buffer.from('<html>please log in</html>'));
      case '/models/close.gguf':
        // As python's http.server and HTTP/1.0 mirrors answer: the connection closed after the body.
        res.writeHead(200, { 'content-length': big.length, connection: 'close' });
        res.end(big);
        return;
      case '/redirect/tiny.gguf':
        res.writeHead(302, { location: '/models/tiny.gguf' }).end();
        return;
      default:
        res.writeHead(404).end();
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((r) => server.close(r));
});

function tempDir(): string {
  return mkdtempSync(path.join(tmpdir(), 'tollgate-pull-'));
}

describe('models pull', () => {
  it('downloads a file into the models directory, reporting progress up to its size', async () => {
    const dir = tempDir();
    const progress: PullProgress[] = [];
    const result = await pullModel({ source: `${base}/models/tiny.gguf`, modelsDir: dir, onProgress: (p) => progress.push({ ...p }) });
    expect(result).toMatchObject({ file: path.join(dir, 'tiny.gguf'), bytes: model.length, resumedFrom: 0, alreadyThere: false });
    expect(readFileSync(result.file).equals(model)).toBe(true);
    expect(progress.at(-1)).toEqual({ received: model.length, total: model.length, resumedFrom: 0 });
    expect(existsSync(`${result.file}.part`)).toBe(false);
    rmSync(dir, { recursive: true });
  });

  it('downloads whole from a server that closes the connection after the body, however slowly the progress is drawn', async () => {
    // undici 7's parser asserted (an uncaught exception: the CLI died with a stack) when the
    // connection closed while the body waited for a slow reader; each download here would.
    const dir = tempDir();
    for (let i = 0; i < 4; i++) {
      rmSync(path.join(dir, 'close.gguf'), { force: true });
      const result = await pullModel({
        source: `${base}/models/close.gguf`,
        modelsDir: dir,
        onProgress: () => {
          const until = Date.now() + 1;
          while (Date.now() < until); // a progress bar slower than the network
        },
      });
      expect(result).toMatchObject({ bytes: big.length, alreadyThere: false });
      expect(statSync(result.file).size).toBe(big.length);
    }
    rmSync(dir, { recursive: true });
  });

  it('saves into a folder named by --out, and says a write failure is the disk, not the network', async () => {
    const dir = tempDir();
    const folder = path.join(dir, 'models');
    mkdirSync(folder);
    const saved = await pullModel({ source: `${base}/models/tiny.gguf`, modelsDir: dir, out: folder });
    expect(saved.file).toBe(path.join(folder, 'tiny.gguf'));
    expect(readFileSync(saved.file).equals(model)).toBe(true);
    // One ending in a slash is a folder too, made if missing: never a file named after it.
    const made = path.join(dir, 'new', 'place');
    const into = await pullModel({ source: `${base}/models/tiny.gguf`, modelsDir: dir, out: `${made}/` });
    expect(into.file).toBe(path.join(made, 'tiny.gguf'));
    expect(readFileSync(into.file).equals(model)).toBe(true);
    // A disk that is full (the part file leads to /dev/full).
    const full = path.join(dir, 'full.gguf');
    symlinkSync('/dev/full', `${full}.part`);
    const err = await pullModel({ source: `${base}/models/tiny.gguf`, modelsDir: dir, out: full }).catch((e) => e);
    expect(err).toBeInstanceOf(PullError);
    expect(err.message).toBe(`cannot write ${full}.part (ENOSPC): free some space, or choose another --out or MODELS_DIR`);
    rmSync(dir, { recursive: true });
  });

  it('resumes an interrupted download with a Range request for the same version, and ends with the whole file', async () => {
    const dir = tempDir();
    const source = `${base}/models/cut.gguf`;
    cutNext.set('/models/cut.gguf', 150_000);
    const first = pullModel({ source, modelsDir: dir });
    await expect(first).rejects.toThrow(/broke off after \d+ bytes.*run the same command again to resume/);
    const partial = path.join(dir, 'cut.gguf.part');
    const kept = statSync(partial).size;
    expect(kept).toBeGreaterThan(0);
    expect(kept).toBeLessThan(model.length);
    seen.length = 0;
    const second = await pullModel({ source, modelsDir: dir });
    const resumed = seen.find((s) => s.path === '/models/cut.gguf');
    expect(resumed?.range).toBe(`bytes=${kept}-`);
    expect(resumed?.ifRange).toBe(`"${sha256(model).slice(0, 16)}"`);
    expect(second).toMatchObject({ bytes: model.length, resumedFrom: kept });
    expect(readFileSync(second.file).equals(model)).toBe(true);
    expect(readdirSync(dir)).toEqual(['cut.gguf']); // neither the part nor its record is left
    rmSync(dir, { recursive: true });
  });

  it('starts over when the server ignores the Range', async () => {
    const dir = tempDir();
    cutNext.set('/models/no-range.gguf', 1000);
    await expect(pullModel({ source: `${base}/models/no-range.gguf`, modelsDir: dir })).rejects.toThrow(/broke off/);
    seen.length = 0;
    const result = await pullModel({ source: `${base}/models/no-range.gguf`, modelsDir: dir });
    expect(seen.find((s) => s.path === '/models/no-range.gguf')?.range).toBe('bytes=1000-');
    expect(result.resumedFrom).toBe(0);
    expect(readFileSync(result.file).equals(model)).toBe(true);
    rmSync(dir, { recursive: true });
  });

  it('finishes a download whose part is already complete', async () => {
    const dir = tempDir();
    // The connection broke; the rest arrived, but the command ended before renaming the part.
    cutNext.set('/models/cut.gguf', 1000);
    await expect(pullModel({ source: `${base}/models/cut.gguf`, modelsDir: dir })).rejects.toThrow(/broke off/);
    appendFileSync(path.join(dir, 'cut.gguf.part'), model.subarray(1000));
    const result = await pullModel({ source: `${base}/models/cut.gguf`, modelsDir: dir });
    expect(result).toMatchObject({ bytes: model.length, resumedFrom: model.length, alreadyThere: false });
    expect(readFileSync(result.file).equals(model)).toBe(true);
    rmSync(dir, { recursive: true });
  });

  // The probe's case: the file at the URL changed between the interrupted try and the resume, and
  // the resume stitched the new version's end onto the old one's start (sizes and magic agreed).
  const changes: [string, { etag?: string; lastModified?: string }, { etag?: string; lastModified?: string }][] = [
    ['an ETag', { etag: '"v1"' }, { etag: '"v2"' }],
    ['a Last-Modified date', { lastModified: 'Mon, 05 Jan 2026 10:00:00 GMT' }, { lastModified: 'Tue, 06 Jan 2026 10:00:00 GMT' }],
  ];
  for (const [validator, before, after] of changes) {
    it(`starts over when the file changed since the interrupted try (${validator}, sent as If-Range)`, async () => {
      const dir = tempDir();
      const at = `/versioned/${validator.length}.gguf`;
      versioned.set(at, { body: model, ...before, ifRange: 'honour' });
      cutNext.set(at, 150_000);
      await expect(pullModel({ source: `${base}${at}`, modelsDir: dir })).rejects.toThrow(/broke off/);
      versioned.set(at, { body: modelV2, ...after, ifRange: 'honour' });
      seen.length = 0;
      const result = await pullModel({ source: `${base}${at}`, modelsDir: dir });
      expect(readFileSync(result.file).equals(modelV2)).toBe(true); // not v1's start and v2's end
      expect(result).toMatchObject({ bytes: modelV2.length, resumedFrom: 0 });
      expect(seen.find((s) => s.path === at)).toMatchObject({ range: 'bytes=150000-', ifRange: before.etag ?? before.lastModified });
      rmSync(dir, { recursive: true });
    });
  }
  it('starts over when a server that does not know If-Range sends the rest of another version', async () => {
    const dir = tempDir();
    versioned.set('/versioned/no-if-range.gguf', { body: model, etag: '"v1"', ifRange: 'ignore' });
    cutNext.set('/versioned/no-if-range.gguf', 150_000);
    await expect(pullModel({ source: `${base}/versioned/no-if-range.gguf`, modelsDir: dir })).rejects.toThrow(/broke off/);
    versioned.set('/versioned/no-if-range.gguf', { body: modelV2, etag: '"v2"', ifRange: 'ignore' });
    const result = await pullModel({ source: `${base}/versioned/no-if-range.gguf`, modelsDir: dir });
    expect(result.resumedFrom).toBe(0);
    expect(readFileSync(result.file).equals(modelV2)).toBe(true);
    rmSync(dir, { recursive: true });
  });

  it('does not resume from a server that names no version of the file, and says so', async () => {
    const dir = tempDir();
    cutNext.set('/models/no-validator.gguf', 150_000);
    await expect(pullModel({ source: `${base}/models/no-validator.gguf`, modelsDir: dir })).rejects.toThrow(
      /broke off after 150000 bytes .*; run the same command again to start over \(the server names no version of the file/,
    );
    seen.length = 0;
    const result = await pullModel({ source: `${base}/models/no-validator.gguf`, modelsDir: dir });
    expect(seen.find((s) => s.path === '/models/no-validator.gguf')?.range).toBeUndefined();
    expect(result.resumedFrom).toBe(0);
    expect(readFileSync(result.file).equals(model)).toBe(true);
    rmSync(dir, { recursive: true });
  });

  it("does not resume another source's part into the same --out file", async () => {
    const dir = tempDir();
    const out = path.join(dir, 'chat.gguf');
    versioned.set('/versioned/first.gguf', { body: model, etag: '"same"', ifRange: 'honour' });
    versioned.set('/versioned/second.gguf', { body: modelV2, etag: '"same"', ifRange: 'honour' });
    cutNext.set('/versioned/first.gguf', 150_000);
    await expect(pullModel({ source: `${base}/versioned/first.gguf`, modelsDir: dir, out })).rejects.toThrow(/broke off/);
    const result = await pullModel({ source: `${base}/versioned/second.gguf`, modelsDir: dir, out });
    expect(result.resumedFrom).toBe(0);
    expect(readFileSync(out).equals(modelV2)).toBe(true);
    rmSync(dir, { recursive: true });
  });

  it('checks a Hugging Face download against the SHA-256 the Hub publishes (X-Linked-Etag), and removes one that differs', async () => {
    const dir = tempDir();
    const env = { HF_ENDPOINT: `${base}/hf` };
    const good = await pullModel({ source: 'hf:acme/repo/good.gguf', modelsDir: dir, env });
    expect(readFileSync(good.file).equals(model)).toBe(true);
    // A 40-hex X-Linked-Etag is a git hash (a file outside LFS), not a SHA-256: nothing to check.
    expect((await pullModel({ source: 'hf:acme/repo/small.gguf', modelsDir: dir, env })).bytes).toBe(model.length);
    const err = await pullModel({ source: 'hf:acme/repo/bad.gguf', modelsDir: dir, env }).catch((e) => e);
    expect(err).toBeInstanceOf(PullError);
    expect(err.message).toBe(
      `the download of ${base}/hf/acme/repo/resolve/main/bad.gguf has SHA-256 ${sha256(model)}, not the ${sha256(modelV2)} Hugging Face publishes for it (X-Linked-Etag): it changed during the download or was damaged on the way; it was removed, run the same command again`,
    );
    expect(readdirSync(dir).sort()).toEqual(['good.gguf', 'small.gguf']);
    rmSync(dir, { recursive: true });
  });

  it('leaves a complete file alone, and replaces one of the wrong size', async () => {
    const dir = tempDir();
    const out = path.join(dir, 'sub', 'named.gguf');
    await pullModel({ source: `${base}/redirect/tiny.gguf`, modelsDir: dir, out });
    const again = await pullModel({ source: `${base}/redirect/tiny.gguf`, modelsDir: dir, out });
    expect(again.alreadyThere).toBe(true);
    writeFileSync(out, model.subarray(0, 10));
    const repaired = await pullModel({ source: `${base}/models/tiny.gguf`, modelsDir: dir, out });
    expect(repaired.alreadyThere).toBe(false);
    expect(readFileSync(out).equals(model)).toBe(true);
    rmSync(dir, { recursive: true });
  });

  it('refuses a download that is not a GGUF file', async () => {
    const dir = tempDir();
    await expect(pullModel({ source: `${base}/models/page.gguf`, modelsDir: dir })).rejects.toThrow(/not a GGUF file/);
    expect(existsSync(path.join(dir, 'page.gguf'))).toBe(false);
    rmSync(dir, { recursive: true });
  });

  it('reports an HTTP error and an unreachable server as errors', async () => {
    const dir = tempDir();
    await expect(pullModel({ source: `${base}/models/absent.gguf`, modelsDir: dir })).rejects.toThrow(/HTTP 404/);
    await expect(pullModel({ source: 'http://127.0.0.1:1/x.gguf', modelsDir: dir })).rejects.toBeInstanceOf(PullError);
    rmSync(dir, { recursive: true });
  });
});

describe('the file a pull saves', () => {
  // The probe's case: `..%2F..%2Fescaped.gguf` was decoded and saved two folders above MODELS_DIR.
  it('is never outside the models folder: a URL whose file name is a path is refused, with what to do instead', async () => {
    const dir = tempDir();
    const models = path.join(dir, 'x', 'models');
    const source = `${base}/any/..%2F..%2Fescaped.gguf`;
    const c = await cli(['models', 'pull', source], { MODELS_DIR: models });
    expect(c.code).toBe(1);
    expect(c.stderr).toBe(
      `error: cannot pull ${source}: its file name "../../escaped.gguf" contains a path separator: give the file to save it as with --out FILE.\n`,
    );
    // The same into a folder --out names.
    mkdirSync(models, { recursive: true });
    await expect(pullModel({ source, modelsDir: dir, out: models })).rejects.toBeInstanceOf(PullFileNameError);
    expect(readdirSync(dir)).toEqual(['x']);
    expect(readdirSync(path.join(dir, 'x'))).toEqual(['models']);
    expect(readdirSync(models)).toEqual([]);
    // --out FILE names it, and the download is the server's.
    const out = path.join(models, 'named.gguf');
    const named = await cli(['models', 'pull', source, '--out', out], { MODELS_DIR: models });
    expect(named.code).toBe(0);
    expect(readFileSync(out).equals(model)).toBe(true);
    rmSync(dir, { recursive: true });
  });

  it('refuses a URL whose file name is not valid percent-encoding with a message, not "URI malformed"', async () => {
    const dir = tempDir();
    const source = `${base}/any/%E0%A4%A.gguf`;
    const c = await cli(['models', 'pull', source], { MODELS_DIR: dir });
    expect(c.code).toBe(1);
    expect(c.stderr).toBe(
      `error: cannot pull ${source}: its file name "%E0%A4%A.gguf" is not valid percent-encoding: give the file to save it as with --out FILE.\n`,
    );
    const out = path.join(dir, 'named.gguf');
    expect((await cli(['models', 'pull', source, '--out', out], { MODELS_DIR: dir })).code).toBe(0);
    expect(readFileSync(out).equals(model)).toBe(true);
    rmSync(dir, { recursive: true });
  });

  it('takes a plain file name, and nothing that could name another file or garble a terminal', () => {
    for (const name of ['model.gguf', '..model.gguf', 'Qwen2.5 (Q4_K_M).gguf', 'modèle-日本.gguf', 'a'.repeat(250)]) {
      expect(fileNameProblem(name), name).toBeUndefined();
    }
    const refused: [string, string][] = [
      ['', 'the source does not end with a file name'],
      ['.', 'its file name "." names a folder'],
      ['..', 'its file name ".." names a folder'],
      ['../x.gguf', 'its file name "../x.gguf" contains a path separator'],
      ['..\\x.gguf', 'its file name "..\\\\x.gguf" contains a path separator'],
      ['x\0.gguf', 'its file name "x\\u0000.gguf" contains a control character'],
      ['x\n.gguf', 'its file name "x\\n.gguf" contains a control character'],
      ['x\u202egnp.gguf', 'its file name "x\\u202egnp.gguf" contains a control character'],
      ['é'.repeat(126), 'its file name is 252 bytes long, more than the 250 allowed'],
    ];
    for (const [name, problem] of refused) expect(fileNameProblem(name), JSON.stringify(name)).toBe(problem);
    expect(parseModelSource('https://h/m/..%2F..%2Fx.gguf')).toEqual({
      spec: 'https://h/m/..%2F..%2Fx.gguf',
      url: 'https://h/m/..%2F..%2Fx.gguf',
      fileNameProblem: 'its file name "../../x.gguf" contains a path separator',
    });
    expect(parseModelSource('https://h/m/%00.gguf').fileNameProblem).toContain('control character');
    expect(parseModelSource('https://h/models/').fileNameProblem).toBe('the source does not end with a file name');
    expect(parseModelSource('hf:o/r/sub/..').fileNameProblem).toBe('its file name ".." names a folder');
    expect(parseModelSource('https://h/m/Q4%20K.gguf').fileName).toBe('Q4 K.gguf');
  });
});

describe('model sources', () => {
  it('read hf:owner/repo/file.gguf as a Hugging Face download, with an optional revision', () => {
    expect(parseModelSource('hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q4_k_m.gguf')).toEqual({
      spec: 'hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q4_k_m.gguf',
      url: 'https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct-GGUF/resolve/main/qwen2.5-0.5b-instruct-q4_k_m.gguf',
      fileName: 'qwen2.5-0.5b-instruct-q4_k_m.gguf',
    });
    expect(parseModelSource('hf:o/r@v2/sub/f.gguf').url).toBe('https://huggingface.co/o/r/resolve/v2/sub/f.gguf');
    expect(() => parseModelSource('hf:only-owner/file.gguf')).toThrow(/hf:owner\/repo\/file.gguf/);
    expect(() => parseModelSource('ftp://x/y.gguf')).toThrow();
  });

  it('give the pull command for a missing catalog file', () => {
    const env = { MODELS_DIR: 'models' };
    expect(pullCommandFor({ file: 'models/f.gguf', source: 'hf:o/r/f.gguf' }, env)).toBe('npx tollgate models pull hf:o/r/f.gguf');
    expect(pullCommandFor({ file: 'models/g.gguf', source: 'hf:o/r/f.gguf' }, env)).toBe(
      'npx tollgate models pull hf:o/r/f.gguf --out models/g.gguf',
    );
    expect(pullCommandFor({ file: 'models/g.gguf' }, env)).toContain('--out models/g.gguf');
  });
});
