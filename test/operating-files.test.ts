// The container files, checked where Docker cannot run: compose.yaml parses, has the production
// topology, and names only images and variables the README documents; its config loads; the
// Dockerfile is multi-stage, runs as a non-root user, checks /readyz, starts what `npm start` does,
// and documents a `docker run` whose environment passes start-up's config checks.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { loadConfig } from '../src/config.js';
import { freePort, spawnTollgate, waitReady } from './support/ready.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');
const readme = read('README.md');
const compose = parse(read('compose.yaml'), { merge: true }) as {
  services: Record<string, { image?: string; environment?: Record<string, string>; volumes?: string[] }>;
};

describe('compose.yaml', () => {
  it('runs two tollgate instances behind a reverse proxy, with PostgreSQL, Redis and a mail catcher', () => {
    const names = Object.keys(compose.services);
    expect(names).toEqual(expect.arrayContaining(['tollgate-a', 'tollgate-b', 'proxy', 'postgres', 'redis', 'mailpit']));
    for (const name of ['tollgate-a', 'tollgate-b']) {
      const env = compose.services[name]!.environment!;
      expect(env.DATABASE_URL).toMatch(/^postgres:\/\/.*@postgres:5432\//);
      expect(env.REDIS_URL).toBe('redis://redis:6379');
      expect(env.SMTP_URL).toBe('smtp://mailpit:1025');
    }
    for (const volume of compose.services.proxy!.volumes ?? []) expect(existsSync(path.join(ROOT, volume.split(':')[0]!))).toBe(true);
  });

  it('names only images and variables the README documents', () => {
    for (const service of Object.values(compose.services))
      if (service.image && service.image !== 'tollgate:latest') expect(readme).toContain(service.image);
    const variables = new Set<string>();
    for (const name of ['tollgate-a', 'tollgate-b'])
      for (const key of Object.keys(compose.services[name]!.environment!)) variables.add(key);
    for (const match of read('compose.yaml').matchAll(/\$\{([A-Z_]+)/g)) variables.add(match[1]!);
    for (const variable of variables) expect(readme, variable).toContain(`\`${variable}\``);
  });

  it('points the instances at a config that loads', () => {
    const env = compose.services['tollgate-a']!.environment!;
    const config = loadConfig({
      CONFIG: path.join(ROOT, env.CONFIG!.replace('/app/', '')),
      HOST: '0.0.0.0',
      NODE_ENV: 'production',
      STRIPE_SECRET_KEY: 'sk_test_compose',
      STRIPE_WEBHOOK_SECRET: 'whsec_compose',
      DATABASE_URL: 'postgres://tollgate:pw@postgres:5432/tollgate',
      TRUST_PROXY: env.TRUST_PROXY,
    });
    expect(config.payments.processor).toBe('stripe');
    expect(config.models.length).toBeGreaterThan(0);
    // Behind Caddy every client would be Caddy: its X-Forwarded-For is believed.
    expect(config.server.trust_proxy).toBe('uniquelocal');
  });
});

describe('Dockerfile', () => {
  const dockerfile = read('Dockerfile');
  it('builds in one stage and runs as a non-root user in another, with /readyz as its health check', () => {
    expect(dockerfile.match(/^FROM /gm)!.length).toBeGreaterThanOrEqual(2);
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toMatch(/^HEALTHCHECK[\s\S]*\/readyz/m);
    expect(dockerfile).toMatch(/^VOLUME \[.*"\/data".*\]$/m);
    expect(dockerfile).toMatch(/HOST=0\.0\.0\.0/);
  });

  it("documents a docker run whose environment loads, where the image's own environment alone is refused", () => {
    // The runtime stage's ENV, and the env file its header comment documents (`#   KEY=value`).
    const runtime = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
    const image = Object.fromEntries(
      [.../^ENV ([\s\S]*?[^\\])$/m.exec(runtime)![1]!.matchAll(/([A-Z_]+)=(\S+)/g)].map((m) => [m[1]!, m[2]!]),
    );
    const envFile = Object.fromEntries([...dockerfile.matchAll(/^# {3}([A-Z_]+)=(\S+)$/gm)].map((m) => [m[1]!, m[2]!]));
    expect(Object.keys(envFile)).toEqual(expect.arrayContaining(['CONFIG', 'STRIPE_SECRET_KEY', 'STRIPE_WEBHOOK_SECRET']));
    expect(dockerfile).toMatch(/^# {3}docker run .*--env-file tollgate\.env .* tollgate$/m);
    expect(readme).toContain('docker run -d -p 8080:8080 --env-file tollgate.env');
    const inRepo = (env: Record<string, string>) => ({
      ...env,
      CONFIG: path.join(ROOT, (env.CONFIG ?? 'config/default.yaml').replace('/app/', '')),
    });
    expect(() => loadConfig(inRepo(image))).toThrow(/sandbox payment processor/);
    const config = loadConfig(inRepo({ ...image, ...envFile }));
    expect(config.payments.processor).toBe('stripe');
    expect(config.host).toBe('0.0.0.0');
  });

  it('builds and starts what npm start builds and starts', () => {
    // `npm start` is "<compile> && exec <serve>": the image compiles when it is built, and serves.
    const start = (JSON.parse(read('package.json')) as { scripts: { start: string } }).scripts.start;
    const [, compile, serve] = /^(.+) && exec (.+)$/.exec(start)!;
    expect(dockerfile).toContain(`\nRUN ${compile}\n`);
    const cmd = JSON.parse(/^CMD (\[.*\])$/m.exec(dockerfile)![1]!) as string[];
    expect(cmd.join(' ')).toBe(serve);
  });
});

describe('logs for people', () => {
  it('prints readable lines, not JSON, with LOG_FORMAT=pretty', async () => {
    const port = await freePort();
    const dir = mkdtempSync(path.join(tmpdir(), 'tollgate-pretty-'));
    const tollgate = spawnTollgate(['src/main.ts'], {
      PORT: String(port),
      LOG_FORMAT: 'pretty',
      DATABASE_URL: `sqlite:${path.join(dir, 'db.sqlite')}`,
      CONFIG: 'config/default.yaml',
    });
    try {
      await waitReady(`http://127.0.0.1:${port}`);
      await (await fetch(`http://127.0.0.1:${port}/healthz`)).text();
      for (let i = 0; i < 100 && !tollgate.output().includes('/healthz'); i++) await new Promise((r) => setTimeout(r, 50));
      const lines = tollgate
        .output()
        .split('\n')
        .filter((l) => l.includes('tollgate is serving') || l.includes('/healthz'));
      expect(lines.length).toBeGreaterThanOrEqual(2);
      for (const line of lines) expect(line.trimStart().startsWith('{')).toBe(false);
    } finally {
      tollgate.proc.kill('SIGTERM');
      await tollgate.exited;
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
