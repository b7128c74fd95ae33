// `npm start` as the README gives it: the server's sources compiled to plain JavaScript under
// build/ (src/build.ts), then run on node alone, without tsx; served, billed and stopped like the
// sources run through tsx.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from './support/fake-upstream.js';
import { ADMIN_TOKEN, catalogYaml } from './support/harness.js';
import { freePort, waitReady } from './support/ready.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const BUILD = path.join(ROOT, 'build');

let upstream: FakeUpstream;
let dir: string;

beforeAll(async () => {
  upstream = await startFakeUpstream();
  dir = mkdtempSync(path.join(tmpdir(), 'tollgate-npm-start-'));
});
afterAll(() => upstream.close());

async function graphql(url: string, query: string, token = ADMIN_TOKEN) {
  const res = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query }),
  });
  return (await res.json()) as { data: Record<string, unknown>; errors?: unknown };
}

describe('npm start', () => {
  it('compiles the server, serves and bills from the compiled files, and stops on SIGTERM', async () => {
    // Output of a source that no longer exists must not survive the next build.
    mkdirSync(path.join(BUILD, 'src'), { recursive: true });
    writeFileSync(path.join(BUILD, 'src', 'removed-long-ago.js'), 'throw new Error("stale");\n');

    const config = path.join(dir, 'config.yaml');
    writeFileSync(config, catalogYaml(upstream.url));
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    let out = '';
    const npm = spawn('npm', ['start'], {
      cwd: ROOT,
      env: {
        ...process.env,
        HOST: '127.0.0.1',
        PORT: String(port),
        CONFIG: config,
        ADMIN_TOKEN,
        DATABASE_URL: `sqlite:${path.join(dir, 'start.db')}`,
        LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    npm.stdout.on('data', (d) => (out += d));
    npm.stderr.on('data', (d) => (out += d));
    const exited = new Promise<number | null>((resolve) => npm.once('exit', (code) => resolve(code)));
    try {
      await waitReady(url);
      expect(out).toMatch(/compiled \d+ files into build\/ in \d+ ms/);
      expect(existsSync(path.join(BUILD, 'src', 'removed-long-ago.js'))).toBe(false);
      expect(existsSync(path.join(BUILD, 'src', 'main.js'))).toBe(true);
      // The browser app is vite's, not the server's.
      expect(existsSync(path.join(BUILD, 'src', 'dashboard'))).toBe(false);
      // Compiled without tsx's keepNames: no function is renamed at run time.
      const compiledFiles = readdirSync(path.join(BUILD, 'src'), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.js'));
      expect(compiledFiles.length).toBeGreaterThan(50);
      for (const f of compiledFiles) expect(readFileSync(path.join(BUILD, 'src', f), 'utf8'), f).not.toContain('__name(');

      // A billed call through the compiled server.
      const created = await graphql(
        url,
        'mutation { createAccount(email: "start@example.com", tier: developer) { account { id } apiKey } }',
      );
      const { account, apiKey } = created.data.createAccount as { account: { id: string }; apiKey: string };
      const res = await fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
        body: JSON.stringify({ model: 'chat-test', messages: [{ role: 'user', content: 'hello there' }] }),
      });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { usage: { total_tokens: number }; choices: { message: { content: string } }[] };
      expect(body.choices[0].message.content.length).toBeGreaterThan(0);
      const viewer = await graphql(url, '{ viewer { id usage { allocation { used } } } }', apiKey);
      expect(viewer.data.viewer).toEqual({ id: account.id, usage: { allocation: { used: body.usage.total_tokens } } });

      // Files found from the project's root, as from the sources: the dashboard's build.
      const page = await fetch(`${url}/dashboard/`);
      expect(page.status).toBe(200);
      const index = path.join(ROOT, 'dist', 'dashboard', 'index.html');
      if (existsSync(index)) expect(await page.text()).toBe(readFileSync(index, 'utf8'));
      else expect(await page.text()).toContain('The dashboard is not built');
    } finally {
      // npm's script execs node, so the signal reaches the server itself.
      npm.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    expect(out).toContain('"msg":"stopped"');
  });
});
