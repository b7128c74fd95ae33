// `npm start` as the README gives it: the server's sources compiled to plain JavaScript under
// build/ (src/build.ts), then run on node alone, without tsx; served, billed and stopped like the
// sources run through tsx. Two started at once from one checkout both come up.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
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

interface Started {
  npm: ChildProcess;
  url: string;
  output: () => string;
  exited: Promise<number | null>;
}

async function npmStart(name: string): Promise<Started> {
  const config = path.join(dir, `${name}.yaml`);
  writeFileSync(config, catalogYaml(upstream.url));
  const port = await freePort();
  let out = '';
  const npm = spawn('npm', ['start'], {
    cwd: ROOT,
    env: {
      ...process.env,
      HOST: '127.0.0.1',
      PORT: String(port),
      CONFIG: config,
      ADMIN_TOKEN,
      DATABASE_URL: `sqlite:${path.join(dir, `${name}.db`)}`,
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  npm.stdout!.on('data', (d) => (out += d));
  npm.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => npm.once('exit', (code) => resolve(code)));
  return { npm, url: `http://127.0.0.1:${port}`, output: () => out, exited };
}

describe('npm start', () => {
  it('compiles the server once for two servers started at once, serves and bills from it, and stops on SIGTERM', async () => {
    // From nothing, with a build that died half-way long ago and an old build to be kept.
    rmSync(BUILD, { recursive: true, force: true });
    mkdirSync(path.join(BUILD, 'tmp-1-1', 'src'), { recursive: true });
    writeFileSync(path.join(BUILD, 'tmp-1-1', 'src', 'main.js'), 'throw new Error("half-written");\n');
    const old = new Date(Date.now() - 3600_000);
    utimesSync(path.join(BUILD, 'tmp-1-1'), old, old);
    mkdirSync(path.join(BUILD, '0123456789abcdef', 'src'), { recursive: true });

    const servers = [await npmStart('a'), await npmStart('b')];
    try {
      await Promise.all(servers.map((s) => waitReady(s.url)));
      const [a, b] = servers as [Started, Started];
      // Each ran the build (both at once, from nothing), or found it done; one build for both.
      const BUILT =
        /compiled the server's \d+ files into build\/([0-9a-f]{16})\/ in \d+ ms|the server's \d+ files are compiled already \(build\/([0-9a-f]{16})\/\)/;
      const built = [a, b].map((s) => BUILT.exec(s.output()));
      expect(built.some((m) => m?.[1])).toBe(true);
      const hashes = built.map((m) => m?.[1] ?? m?.[2]);
      const current = realpathSync(path.join(BUILD, 'current'));
      expect(hashes).toEqual([path.basename(current), path.basename(current)]);
      expect(existsSync(path.join(BUILD, 'tmp-1-1'))).toBe(false);
      expect(existsSync(path.join(BUILD, '0123456789abcdef'))).toBe(true);
      expect(readdirSync(BUILD).filter((f) => f.startsWith('tmp-'))).toEqual([]);
      // The browser app is vite's, not the server's.
      expect(existsSync(path.join(current, 'src', 'dashboard'))).toBe(false);
      // Compiled without tsx's keepNames: no function is renamed at run time.
      const files = readdirSync(path.join(current, 'src'), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.js'));
      expect(files.length).toBeGreaterThan(50);
      for (const f of files) expect(readFileSync(path.join(current, 'src', f), 'utf8'), f).not.toContain('__name(');

      // A billed call through each.
      for (const [i, s] of servers.entries()) {
        const created = await graphql(
          s.url,
          `mutation { createAccount(email: "start${i}@example.com", tier: developer) { account { id } apiKey } }`,
        );
        const { account, apiKey } = created.data.createAccount as { account: { id: string }; apiKey: string };
        const res = await fetch(`${s.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
          body: JSON.stringify({ model: 'chat-test', messages: [{ role: 'user', content: 'hello there' }] }),
        });
        expect(res.status).toBe(200);
        const body = (await res.json()) as { usage: { total_tokens: number }; choices: { message: { content: string } }[] };
        expect(body.choices[0]!.message.content.length).toBeGreaterThan(0);
        const viewer = await graphql(s.url, '{ viewer { id usage { allocation { used } } } }', apiKey);
        expect(viewer.data.viewer).toEqual({ id: account.id, usage: { allocation: { used: body.usage.total_tokens } } });
      }

      // Files found from the project's root, as from the sources: the dashboard's build.
      const page = await fetch(`${a.url}/dashboard/`);
      expect(page.status).toBe(200);
      const index = path.join(ROOT, 'dist', 'dashboard', 'index.html');
      if (existsSync(index)) expect(await page.text()).toBe(readFileSync(index, 'utf8'));
      else expect(await page.text()).toContain('The dashboard is not built');
    } finally {
      // npm's script execs node, so the signal reaches the server itself.
      for (const s of servers) s.npm.kill('SIGTERM');
    }
    for (const s of servers) {
      expect(await s.exited).toBe(0);
      expect(s.output()).toContain('"msg":"stopped"');
    }
    rmSync(path.join(BUILD, '0123456789abcdef'), { recursive: true, force: true });

    // Started again with the sources unchanged: nothing is compiled.
    const again = await npmStart('c');
    try {
      await waitReady(again.url);
      expect(again.output()).toMatch(/the server's \d+ files are compiled already \(build\/[0-9a-f]{16}\/\)/);
    } finally {
      again.npm.kill('SIGTERM');
    }
    expect(await again.exited).toBe(0);
  }, 180_000); // two servers compiled and started from nothing: minutes on a busy machine
});
