// The server process with in-process models, as an operator starts it: the start-up log says which
// model files are missing (and the command that fetches each) or refused, the other models serve;
// a catalog that contradicts a GGUF stops start-up. And the CLI's model commands (run in-process
// through runCli, the same entry bin/tollgate.js calls): fixtures, and pull from a loopback server.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfigText } from '../src/config.js';
import { cli } from './support/cli.js';
import { ADMIN_TOKEN } from './support/harness.js';
import { freePort, spawnTollgate, waitReady } from './support/ready.js';

let dir: string;

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'tollgate-llama-start-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('tollgate models fixtures', () => {
  it('writes the fixtures and a config that serves them', async () => {
    const out = path.join(dir, 'fixtures');
    const c = await cli(['models', 'fixtures', '--out', out, '--json']);
    expect(c.code).toBe(0);
    const written = JSON.parse(c.stdout);
    for (const file of [written.chat, written.embedding, written.reranker, written.config]) expect(existsSync(file)).toBe(true);
    expect(readFileSync(written.config, 'utf8')).toContain('type: llamacpp');
  });

  it("serves the fixtures under the README's model ids, each from the file --json reports, at prices that reach the wallet", async () => {
    const out = path.join(dir, 'fixtures-catalog');
    const written = JSON.parse((await cli(['models', 'fixtures', '--out', out, '--json'])).stdout);
    const config = parseConfigText(readFileSync(written.config, 'utf8'), written.config);
    const byId = Object.fromEntries(config.models.map((m) => [m.id, m]));
    expect(Object.keys(byId).sort()).toEqual(['chat-fast', 'embed-small', 'guard-mini', 'rerank-base']);
    const fileOf = (id: string) => (byId[id]!.engine as { file: string }).file;
    expect([fileOf('chat-fast'), fileOf('embed-small'), fileOf('rerank-base'), fileOf('guard-mini')]).toEqual([
      written.chat,
      written.embedding,
      written.reranker,
      written.guard,
    ]);
    for (const m of config.models) {
      const prices = Object.entries(m.pricing)
        .filter(([k]) => k !== 'currency')
        .map(([, v]) => v);
      expect(
        prices.every((p) => typeof p === 'number' && p > 0),
        m.id,
      ).toBe(true);
    }
    // The developer tier the README's account uses pays from the wallet from its first call.
    expect(config.tiers.developer.monthly_tokens).toBe(0);
    expect(config.tiers.developer.overage).toBe(true);
  });
});

describe('the server process with in-process models', () => {
  it('logs which pull command fetches a missing model, refuses a truncated one, and serves the rest', { timeout: 90_000 }, async () => {
    const out = path.join(dir, 'serve');
    expect((await cli(['models', 'fixtures', '--out', out])).code).toBe(0);
    const base = readFileSync(path.join(out, 'tollgate.yaml'), 'utf8');
    const cut = path.join(out, 'cut.gguf');
    writeFileSync(cut, readFileSync(path.join(out, 'tiny-embed.gguf')).subarray(0, 50_000));
    const config = path.join(out, 'broken.yaml');
    writeFileSync(
      config,
      base
        .replace(
          /(id: rerank-base[\s\S]*?file: )"[^"]+"/,
          `$1"${path.join(out, 'absent.gguf')}", source: "hf:acme/rerank-GGUF/absent.gguf"`,
        )
        .replace(/(id: embed-small[\s\S]*?file: )"[^"]+"/, `$1"${cut}"`),
    );
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const server = spawnTollgate(['src/main.ts'], {
      CONFIG: config,
      PORT: String(port),
      DATABASE_URL: `sqlite:${path.join(out, 'db.sqlite')}`,
      MODELS_DIR: out,
    });
    try {
      await waitReady(url);
      const log = server.output();
      expect(log).toContain('npx tollgate models pull hf:acme/rerank-GGUF/absent.gguf');
      expect(log).toContain(`${cut}: refused: the file is truncated`);
      expect(log).toMatch(/model \\"chat-fast\\" loaded|"model":"chat-fast".*loaded/);
      // With ADMIN_TOKEN and models, no first-run warning.
      expect(log).not.toMatch(/ADMIN_TOKEN is not set|names no models/);
      const created = await fetch(`${url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_TOKEN}` },
        body: JSON.stringify({ query: 'mutation { createAccount(email: "llama@example.com", tier: enterprise) { apiKey } }' }),
      }).then((r) => r.json());
      const key = created.data.createAccount.apiKey;
      const call = (route: string, body: unknown) =>
        fetch(`${url}/v1/${route}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
          body: JSON.stringify(body),
        });
      expect((await call('rerank', { model: 'rerank-base', query: 'q', documents: ['d'] })).status).toBe(503);
      expect((await call('embeddings', { model: 'embed-small', input: 'x' })).status).toBe(503);
      const chat = await call('chat/completions', { model: 'chat-fast', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 });
      expect(chat.status).toBe(200);
      expect((await chat.json()).usage.completion_tokens).toBe(4);
    } finally {
      server.proc.kill('SIGTERM');
      await server.exited;
    }
  });

  it('checks the port before any model loads: a taken port is one line naming PORT, with no stack trace', { timeout: 90_000 }, async () => {
    const out = path.join(dir, 'port');
    expect((await cli(['models', 'fixtures', '--out', out])).code).toBe(0);
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    const port = (taken.address() as AddressInfo).port;
    try {
      const server = spawnTollgate(['src/main.ts'], {
        CONFIG: path.join(out, 'tollgate.yaml'),
        PORT: String(port),
        DATABASE_URL: `sqlite:${path.join(out, 'db.sqlite')}`,
      });
      expect(await server.exited).toBe(1);
      const lines = server.output().trim().split('\n');
      expect(lines).toEqual([
        `tollgate: port ${port} on 127.0.0.1 is already in use: stop what listens there, or choose another port with PORT (e.g. PORT=${port + 1} npm start)`,
      ]);
      expect(existsSync(path.join(out, 'db.sqlite'))).toBe(false); // nothing opened, nothing loaded
    } finally {
      await new Promise((r) => taken.close(r));
    }
  });

  it('warns once at start when ADMIN_TOKEN is not set or the config names no models, and serves', { timeout: 90_000 }, async () => {
    const out = path.join(dir, 'bare');
    mkdirSync(out, { recursive: true });
    const config = path.join(out, 'empty.yaml');
    writeFileSync(config, '');
    const port = await freePort();
    const server = spawnTollgate(['src/main.ts'], {
      CONFIG: config,
      PORT: String(port),
      ADMIN_TOKEN: '',
      DATABASE_URL: `sqlite:${path.join(out, 'db.sqlite')}`,
    });
    try {
      await waitReady(`http://127.0.0.1:${port}`);
      const log = server.output();
      expect(log.match(/ADMIN_TOKEN is not set: the operator's GraphQL operations/g)).toHaveLength(1);
      expect(log.match(/the config names no models: every model call answers 400 invalid_model/g)).toHaveLength(1);
    } finally {
      server.proc.kill('SIGTERM');
      await server.exited;
    }
  });

  it("a HOST that is not this machine's is one line naming HOST, with no stack trace, and nothing opened", {
    timeout: 90_000,
  }, async () => {
    const out = path.join(dir, 'host');
    expect((await cli(['models', 'fixtures', '--out', out])).code).toBe(0);
    // Off loopback the sandbox processor must be allowed (it would otherwise stop start-up first).
    const config = path.join(out, 'tollgate.yaml');
    writeFileSync(config, `${readFileSync(config, 'utf8')}\npayments:\n  allow_sandbox: true\n`);
    // 192.0.2.1 (TEST-NET-1) is no interface of any machine.
    const server = spawnTollgate(['src/main.ts'], {
      CONFIG: config,
      PORT: '0',
      HOST: '192.0.2.1',
      DATABASE_URL: `sqlite:${path.join(out, 'db.sqlite')}`,
    });
    expect(await server.exited).toBe(1);
    expect(server.output().trim().split('\n')).toEqual([
      'tollgate: HOST 192.0.2.1 is not an address of this machine: listen on one of its own (127.0.0.1 by default, 0.0.0.0 for every interface)',
    ]);
    expect(existsSync(path.join(out, 'db.sqlite'))).toBe(false);
  });

  it('a database file it cannot create is one line naming the file and DATABASE_URL, with no stack trace', {
    timeout: 90_000,
  }, async () => {
    const out = path.join(dir, 'nodb');
    expect((await cli(['models', 'fixtures', '--out', out])).code).toBe(0);
    // A file where the database's directory should be (root may write anywhere, so not a permission).
    writeFileSync(path.join(out, 'not-a-dir'), 'x');
    const url = `sqlite:${path.join(out, 'not-a-dir', 'data', 'db.sqlite')}`;
    const server = spawnTollgate(['src/main.ts'], { CONFIG: path.join(out, 'tollgate.yaml'), PORT: '0', DATABASE_URL: url });
    expect(await server.exited).toBe(1);
    const lines = server.output().trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      new RegExp(
        `^tollgate: cannot open the SQLite database ${path.join(out, 'not-a-dir', 'data', 'db.sqlite')} \\(DATABASE_URL=${url}\\): ${path.join(out, 'not-a-dir')} is a file, not a folder: set DATABASE_URL to a file in a folder`,
      ),
    );
  });

  it('prints a config error once, naming the key and suggesting the one meant', { timeout: 90_000 }, async () => {
    const out = path.join(dir, 'typo');
    expect((await cli(['models', 'fixtures', '--out', out])).code).toBe(0);
    const config = path.join(out, 'tollgate.yaml');
    writeFileSync(config, readFileSync(config, 'utf8').replace('owned_by: tollgate', 'owned_by: tollgate\n    ownd_by: x'));
    const server = spawnTollgate(['src/main.ts'], { CONFIG: config, PORT: '0', DATABASE_URL: `sqlite:${path.join(out, 'db.sqlite')}` });
    expect(await server.exited).toBe(1);
    const output = server.output();
    expect(output.trim().split('\n')).toEqual([`tollgate: ${config}: model "chat-fast": unknown key "ownd_by" (did you mean "owned_by"?)`]);
  });

  it('stops start-up when the catalog contradicts a GGUF, naming the file and the key', { timeout: 90_000 }, async () => {
    const out = path.join(dir, 'mismatch');
    expect((await cli(['models', 'fixtures', '--out', out])).code).toBe(0);
    const config = path.join(out, 'tollgate.yaml');
    writeFileSync(config, readFileSync(config, 'utf8').replace('output_dimensions: 64', 'output_dimensions: 1024'));
    const server = spawnTollgate(['src/main.ts'], { CONFIG: config, PORT: '0', DATABASE_URL: `sqlite:${path.join(out, 'db.sqlite')}` });
    expect(await server.exited).toBe(1);
    expect(server.output()).toContain(
      `${path.join(out, 'tiny-embed.gguf')}: "bert.embedding_length" is 64, but model "embed-small" declares specifications.output_dimensions: 1024`,
    );
  });
});

describe('tollgate models pull', () => {
  let server: Server;
  let base: string;
  const body = Buffer.concat([Buffer.from('GGUF'), Buffer.alloc(300_000, 7)]);

  beforeAll(async () => {
    server = createServer((req, res) => {
      // The file, at a path of its own and where a Hugging Face mirror (HF_ENDPOINT) keeps it.
      if (!['/files/model.gguf', '/acme/tiny-GGUF/resolve/main/model.gguf'].includes(req.url ?? '')) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-length': body.length }).end(req.method === 'HEAD' ? undefined : body);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise((r) => server.close(r)));

  it('downloads into MODELS_DIR and reports the file, then finds it already there', async () => {
    const models = path.join(dir, 'pulled');
    const first = await cli(['models', 'pull', `${base}/files/model.gguf`, '--json'], { MODELS_DIR: models });
    expect(first.code).toBe(0);
    const result = JSON.parse(first.stdout);
    expect(result).toEqual({ file: path.join(models, 'model.gguf'), bytes: body.length, resumed_from: 0, already_there: false });
    expect(first.stderr).toContain('100%');
    expect(readFileSync(result.file).equals(body)).toBe(true);
    const second = await cli(['models', 'pull', `${base}/files/model.gguf`], { MODELS_DIR: models });
    expect(second.code).toBe(0);
    expect(second.stdout).toContain('is already there');
  });

  it('--defaults fetches every in-process model of the config that names a source, to its file', async () => {
    const out = path.join(dir, 'defaults');
    const config = path.join(dir, 'defaults.yaml');
    const entry = (id: string, file: string, source: string) => `
  - id: ${id}
    category: embedding
    owned_by: tests
    created: 0
    version: "1"
    status: active
    capabilities: { embeddings: true }
    pricing: { price_per_million_tokens: 0, currency: usd }
    specifications: { max_tokens: 512, output_dimensions: 64 }
    engine: { type: llamacpp, file: "${file}"${source ? `, source: "${source}"` : ''} }`;
    writeFileSync(
      config,
      `models:${entry('a', path.join(out, 'a.gguf'), `${base}/files/model.gguf`)}${entry('b', path.join(out, 'sub/b.gguf'), `${base}/files/model.gguf`)}${entry('c', path.join(out, 'c.gguf'), '')}\n`,
    );
    const c = await cli(['models', 'pull', '--defaults', '--json'], { CONFIG: config });
    expect(c.code).toBe(0);
    const results = JSON.parse(c.stdout);
    expect(results.map((r: { model: string; file: string }) => [r.model, r.file])).toEqual([
      ['a', path.join(out, 'a.gguf')],
      ['b', path.join(out, 'sub/b.gguf')],
    ]);
    expect(readFileSync(path.join(out, 'sub/b.gguf')).equals(body)).toBe(true);
    expect(existsSync(path.join(out, 'c.gguf'))).toBe(false);
  });

  it('on Ctrl-C stops its progress, keeps the part downloaded and says when the same command resumes it', async () => {
    // A file whose first half comes at once and whose rest never does.
    const stalled = createServer((req, res) => {
      res.writeHead(200, { 'content-length': body.length });
      if (req.method === 'HEAD') return void res.end();
      res.write(body.subarray(0, body.length / 2));
    });
    await new Promise<void>((r) => stalled.listen(0, '127.0.0.1', r));
    const models = path.join(dir, 'interrupted');
    try {
      const child = spawn(
        process.execPath,
        ['bin/tollgate.js', 'models', 'pull', `http://127.0.0.1:${(stalled.address() as AddressInfo).port}/m.gguf`],
        {
          env: { ...process.env, MODELS_DIR: models, TOLLGATE_PROGRESS: 'lines' },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString();
        if (stderr.includes('25%') && !child.killed) child.kill('SIGINT');
      });
      const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
      expect(code).toBe(130);
      expect(stderr).toMatch(
        /interrupted; what was downloaded is kept, and the same command resumes it if the server named the file's version \(an ETag or Last-Modified\), else starts it over/,
      );
      expect(existsSync(path.join(models, 'm.gguf.part'))).toBe(true);
      expect(existsSync(path.join(models, 'm.gguf'))).toBe(false);
    } finally {
      stalled.closeAllConnections();
      await new Promise((r) => stalled.close(r));
    }
  }, 60_000);

  it('fetches hf: sources from the mirror HF_ENDPOINT names', async () => {
    const models = path.join(dir, 'mirror');
    const c = await cli(['models', 'pull', 'hf:acme/tiny-GGUF/model.gguf', '--json'], { MODELS_DIR: models, HF_ENDPOINT: `${base}/` });
    expect(c.code).toBe(0);
    expect(readFileSync(path.join(models, 'model.gguf')).equals(body)).toBe(true);
  });

  it('goes through the proxy HTTP_PROXY and HTTPS_PROXY name', async () => {
    // A forward proxy on loopback: it tunnels models.example.invalid:80 to the file server above
    // (the name is never resolved) and refuses everything else.
    const seen: string[] = [];
    const proxy = createServer((_req, res) => void res.writeHead(405).end());
    proxy.on('connect', (req, socket: Socket) => {
      seen.push(`CONNECT ${req.url}`);
      if (req.url !== 'models.example.invalid:80') return void socket.end('HTTP/1.1 403 Forbidden\r\n\r\n');
      const upstream = connect(Number(new URL(base).port), '127.0.0.1', () => {
        socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        upstream.pipe(socket).pipe(upstream);
      });
      upstream.on('error', () => socket.destroy());
      socket.on('error', () => upstream.destroy());
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    try {
      const models = path.join(dir, 'proxied');
      const plain = await cli(['models', 'pull', 'http://models.example.invalid/files/model.gguf', '--json'], {
        MODELS_DIR: models,
        HTTP_PROXY: proxyUrl,
        NO_PROXY: '',
      });
      expect(plain.code).toBe(0);
      expect(seen).toContain('CONNECT models.example.invalid:80');
      expect(readFileSync(path.join(models, 'model.gguf')).equals(body)).toBe(true);
      const secure = await cli(['models', 'pull', 'https://models.example.invalid/files/other.gguf'], {
        MODELS_DIR: models,
        HTTPS_PROXY: proxyUrl,
        NO_PROXY: '',
      });
      expect(secure.code).toBe(1);
      expect(seen).toContain('CONNECT models.example.invalid:443');
      expect(secure.stderr).toContain(`through the proxy 127.0.0.1:${(proxy.address() as AddressInfo).port}`);
    } finally {
      await new Promise((r) => proxy.close(r));
    }
  });

  it('--defaults names each model and file it could not fetch and points to the offline fixtures', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const nowhere = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise((r) => closed.close(r)); // nothing listens there now: connection refused
    const config = path.join(dir, 'unreachable.yaml');
    const file = path.join(dir, 'unreachable', 'chat.gguf');
    writeFileSync(
      config,
      `models:
  - id: chat-fast
    category: chat
    owned_by: tests
    created: 0
    version: "1"
    status: active
    capabilities: { chat_completion: true, streaming: true, function_calling: false }
    pricing: { input_price_per_million: 1, output_price_per_million: 1, currency: usd }
    specifications: { context_window: 1024, max_output_tokens: 64, training_cutoff: "2025-01" }
    engine: { type: llamacpp, file: "${file}", source: "${nowhere}/chat.gguf" }
`,
    );
    const c = await cli(['models', 'pull', '--defaults'], { CONFIG: config });
    expect(c.code).toBe(1);
    expect(c.stderr).toContain(`model "chat-fast": cannot pull ${nowhere}/chat.gguf into ${file}: cannot reach ${nowhere}: ECONNREFUSED`);
    expect(c.stderr).toContain('1 of 1 models could not be pulled (chat-fast)');
    expect(c.stderr).toContain('HTTPS_PROXY');
    expect(c.stderr).toContain('HF_ENDPOINT');
    expect(c.stderr).toContain('npx tollgate models fixtures --out fixtures && CONFIG=fixtures/tollgate.yaml npm start');

    // With --json: one entry per model on stdout, the one fetched and the one that could not be
    // (with its error), then the same failure on stderr and exit code 1.
    const fetched = path.join(dir, 'unreachable', 'fetched.gguf');
    writeFileSync(
      config,
      `${readFileSync(config, 'utf8')}  - id: embed-small
    category: embedding
    owned_by: tests
    created: 0
    version: "1"
    status: active
    capabilities: { embeddings: true }
    pricing: { price_per_million_tokens: 0, currency: usd }
    specifications: { max_tokens: 512, output_dimensions: 64 }
    engine: { type: llamacpp, file: "${fetched}", source: "${base}/files/model.gguf" }
`,
    );
    const j = await cli(['models', 'pull', '--defaults', '--json'], { CONFIG: config });
    expect(j.code).toBe(1);
    expect(JSON.parse(j.stdout)).toEqual([
      { model: 'chat-fast', file, source: `${nowhere}/chat.gguf`, error: `cannot reach ${nowhere}: ECONNREFUSED` },
      { model: 'embed-small', file: fetched, bytes: body.length, resumed_from: 0, already_there: false },
    ]);
    expect(j.stderr).toContain('1 of 2 models could not be pulled (chat-fast)');
  });

  it('fails with a message and exit code 1 when the file cannot be fetched', async () => {
    const c = await cli(['models', 'pull', `${base}/files/absent.gguf`], { MODELS_DIR: path.join(dir, 'nothing') });
    expect(c.code).toBe(1);
    expect(c.stderr).toContain('HTTP 404');
  });
});
