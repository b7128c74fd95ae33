// What stops start-up before the server serves, in one line an operator can act on: here, a
// MAIL_DIR that e-mails (receipts, alerts, password resets) cannot be written to. And what it warns
// of: a second server on the same database while rate limits are counted in each one's memory.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';
import { closeServices, createServices } from '../src/container.js';
import { freePort, spawnTollgate, waitReady } from './support/ready.js';

const dir = mkdtempSync(path.join(tmpdir(), 'tollgate-startup-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('refuses a MAIL_DIR under /proc in one line, and the CLI an --out there: a recursive mkdir there never returned', async () => {
  const config = path.join(dir, 'proc.yaml');
  writeFileSync(config, 'models: []\n');
  const server = spawnTollgate(['src/main.ts'], {
    CONFIG: config,
    DATABASE_URL: `sqlite:${path.join(dir, 'proc.sqlite')}`,
    MAIL_DIR: '/proc/tollgate-nowhere/mail',
    PORT: String(await freePort()),
  });
  const killer = setTimeout(() => server.proc.kill('SIGKILL'), 60_000);
  try {
    expect(await server.exited).toBe(1);
    expect(server.output()).toContain(
      'MAIL_DIR /proc/tollgate-nowhere/mail: e-mails (receipts, alerts, password resets) cannot be written there (ENOENT)',
    );
  } finally {
    clearTimeout(killer);
  }
  const cli = spawnTollgate(['bin/tollgate.js', 'models', 'fixtures', '--out', '/proc/tollgate-nowhere'], {});
  const cliKiller = setTimeout(() => cli.proc.kill('SIGKILL'), 60_000);
  try {
    expect(await cli.exited).toBe(1);
    expect(cli.output()).toContain('/proc/tollgate-nowhere');
  } finally {
    clearTimeout(cliKiller);
  }
}, 90_000);

it('refuses to start when MAIL_DIR cannot be written (without SMTP_URL), naming it and what to do', async () => {
  const config = path.join(dir, 'c.yaml');
  writeFileSync(config, 'models: []\n');
  // A file where the folder should be: no user, root included, can write e-mails under it.
  const blocker = path.join(dir, 'not-a-folder');
  writeFileSync(blocker, 'x');
  const cfg = loadConfig({ CONFIG: config, DATABASE_URL: `sqlite:${path.join(dir, 'db.sqlite')}`, MAIL_DIR: path.join(blocker, 'mail') });
  const failure = await createServices(cfg, pino({ level: 'silent' })).then(
    async (services) => {
      await closeServices(services);
      return null;
    },
    (e: unknown) => e,
  );
  expect(failure).toBeInstanceOf(ConfigError);
  expect((failure as Error).message).toBe(
    `MAIL_DIR ${path.join(blocker, 'mail')}: e-mails (receipts, alerts, password resets) cannot be written there (ENOTDIR): make it a writable folder, set MAIL_DIR to another, or set SMTP_URL`,
  );
  // With a folder it can write to, it starts.
  const ok = await createServices(
    loadConfig({ CONFIG: config, DATABASE_URL: `sqlite:${path.join(dir, 'db.sqlite')}`, MAIL_DIR: path.join(dir, 'mail') }),
    pino({ level: 'silent' }),
  );
  await closeServices(ok);
});

it('warns when another server uses the same database while rate limits are counted in memory', async () => {
  const config = path.join(dir, 'two.yaml');
  writeFileSync(config, 'models: []\n');
  const off = path.join(dir, 'off.yaml');
  writeFileSync(off, 'models: []\nrate_limits: { backend: none }\n');
  const env = { CONFIG: config, DATABASE_URL: `sqlite:${path.join(dir, 'two.sqlite')}`, MAIL_DIR: path.join(dir, 'mail') };
  const logged: { level: number; msg: string; servers?: { pid: number }[] }[] = [];
  const capture = () => pino({ level: 'warn' }, { write: (line: string) => void logged.push(JSON.parse(line)) });
  const warned = () => logged.filter((l) => l.msg.includes('this database'));
  // Alone on its database: nothing to say.
  const alone = await createServices(loadConfig(env), capture());
  await closeServices(alone);
  expect(warned()).toEqual([]);

  // A server in a process of its own, as an operator would start a second one.
  const port = await freePort();
  const first = spawnTollgate(['src/main.ts'], { ...env, PORT: String(port) });
  try {
    await waitReady(`http://127.0.0.1:${port}`);
    // Limits off here: nothing is counted per process, nothing to say.
    const unlimited = await createServices(loadConfig({ ...env, CONFIG: off }), capture());
    await closeServices(unlimited);
    expect(warned()).toEqual([]);
    // Limits in memory: the server that finds the other's heartbeat says what it costs.
    const second = await createServices(loadConfig(env), capture());
    await closeServices(second);
    expect(warned()).toHaveLength(1);
    expect(warned()[0]!.level).toBe(40);
    expect(warned()[0]!.msg).toBe(
      `another tollgate server uses this database: rate limits are counted in each server's memory, so together they admit more than a tier's limits; set REDIS_URL on every server (README "Scaling out")`,
    );
    expect(warned()[0]!.servers).toEqual([expect.objectContaining({ pid: first.proc.pid })]);
  } finally {
    first.proc.kill('SIGTERM');
    await first.exited;
  }
  // The other server stopped (and unregistered): a new one starts without the warning.
  logged.length = 0;
  const after = await createServices(loadConfig(env), capture());
  await closeServices(after);
  expect(warned()).toEqual([]);
}, 120_000);

it('says a HOST this machine does not have as that, before the sandbox refuses a HOST that is not loopback', async () => {
  const config = path.join(dir, 'host.yaml');
  writeFileSync(config, 'models: []\n');
  for (const [host, said] of [
    ['10.9.9.9', 'HOST 10.9.9.9 is not an address of this machine'],
    ['no-such-host.invalid', 'HOST no-such-host.invalid is no address or name this machine can resolve'],
  ] as const) {
    const server = spawnTollgate(['src/main.ts'], {
      CONFIG: config,
      DATABASE_URL: `sqlite:${path.join(dir, 'host.sqlite')}`,
      HOST: host,
      PORT: String(await freePort()),
    });
    expect(await server.exited, host).toBe(1);
    expect(server.output(), host).toContain(said);
    expect(server.output(), host).not.toContain('sandbox');
  }
}, 90_000);

it('links to the port it bound when PORT=0 picks one, on loopback for every interface', async () => {
  const config = path.join(dir, 'port0.yaml');
  writeFileSync(config, 'models: []\npayments: { allow_sandbox: true }\n');
  for (const host of ['127.0.0.1', '0.0.0.0', '::']) {
    const server = spawnTollgate(['src/main.ts'], {
      CONFIG: config,
      DATABASE_URL: `sqlite:${path.join(dir, 'port0.db')}`,
      PORT: '0',
      HOST: host,
      LOG_FORMAT: 'json',
    });
    try {
      let serving: { url: string; publicUrl: string } | undefined;
      for (let i = 0; i < 600 && !serving; i++) {
        const line = server
          .output()
          .split('\n')
          .find((l) => l.includes('tollgate is serving'));
        if (line) serving = JSON.parse(line);
        else await new Promise((r) => setTimeout(r, 100));
      }
      const port = new URL(serving!.url).port;
      expect(Number(port), host).toBeGreaterThan(0);
      expect(serving!.publicUrl, host).toBe(`http://127.0.0.1:${port}`);
    } finally {
      server.proc.kill('SIGTERM');
      await server.exited;
    }
  }
}, 120_000);

it('names the database it serves in its start-up line, and on a database without accounts says how to make the first', async () => {
  const config = path.join(dir, 'first.yaml');
  writeFileSync(config, 'models: []\n');
  const port = await freePort();
  const file = path.join(dir, 'first', 'tollgate.db');
  const server = spawnTollgate(['src/main.ts'], { CONFIG: config, DATABASE_URL: `sqlite:${file}`, PORT: String(port), LOG_FORMAT: 'json' });
  try {
    await waitReady(`http://127.0.0.1:${port}`);
    const lines = server
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { msg: string; database?: string });
    expect(lines.find((l) => l.msg === 'tollgate is serving')?.database).toBe(file);
    const hint = lines.find((l) => l.msg.startsWith('no accounts yet'))?.msg;
    expect(hint).toBe(
      `no accounts yet: create one with \`npx tollgate accounts create --email you@example.com --tier developer\` (the same DATABASE_URL), or sign up at http://127.0.0.1:${port}/dashboard/signup`,
    );
  } finally {
    server.proc.kill('SIGTERM');
    await server.exited;
  }
}, 90_000);
