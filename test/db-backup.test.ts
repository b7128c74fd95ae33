// `tollgate db backup --out FILE`: a copy of the SQLite database made while the server serves
// billed calls, which opens, passes `ledger verify` and holds the same balances; `tollgate db
// restore --from FILE` puts it back, over what a crashed server left, and `ledger verify` checks
// the file's integrity too.
import { spawn, spawnSync } from 'node:child_process';
import {
  closeSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import Database from 'better-sqlite3';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../src/cli.js';
import { ADMIN_TOKEN, startTestServer, type TestServer } from './support/harness.js';
import { until } from './support/wait.js';

let s: TestServer;
const out = mkdtempSync(path.join(tmpdir(), 'tollgate-backup-'));

beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => {
  await s.close();
  rmSync(out, { recursive: true, force: true });
});

async function cli(env: Record<string, string>, ...args: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await runCli(['node', 'tollgate', ...args], {
    stdout: (t) => (stdout += t),
    stderr: (t) => (stderr += t),
    env: { ...env, CONFIG: path.join(s.dir, 'config.yaml') },
  });
  return { code, stdout, stderr };
}

describe('db backup', () => {
  it('copies the database while calls are billed, and the copy passes ledger verify with the same balance', async () => {
    const { id, apiKey } = await s.account('startup');
    await s.graphql(
      'mutation($a: ID!) { creditWallet(input: {accountId: $a, amount: "25", type: bonus, description: "for the backup test"}) { id } }',
      { a: id },
      ADMIN_TOKEN,
    );
    const call = () =>
      fetch(`${s.v1}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
        body: JSON.stringify({ model: 'chat-test', messages: [{ role: 'user', content: 'hello #tokens=8' }] }),
      }).then((r) => r.status);
    // Billed calls go on during the backup.
    let serving = true;
    const load = (async () => {
      const statuses: number[] = [];
      while (serving) statuses.push(await call());
      return statuses;
    })();
    const file = path.join(out, 'copy.db');
    const backup = await cli({ DATABASE_URL: `sqlite:${path.join(s.dir, 'tollgate.db')}` }, 'db', 'backup', '--out', file, '--json');
    serving = false;
    const statuses = await load;
    expect(backup.code).toBe(0);
    expect(JSON.parse(backup.stdout)).toMatchObject({ out: file });
    expect(statuses.length).toBeGreaterThan(0);
    expect(statuses.every((st) => st === 200)).toBe(true);

    const verify = await cli({ DATABASE_URL: `sqlite:${file}` }, 'ledger', 'verify', '--json');
    expect(verify.code).toBe(0);
    expect(JSON.parse(verify.stdout)).toEqual({ ok: true, problems: [] });
    const balance = await cli({ DATABASE_URL: `sqlite:${file}` }, 'wallet', 'balance', '--account', id, '--json');
    expect(balance.code).toBe(0);
    const copied = Number(JSON.parse(balance.stdout).balance);
    expect(copied).toBeGreaterThan(0);
    expect(copied).toBeLessThanOrEqual(25);
  });

  it('restores a backup over what a crashed server left (its WAL removed first), refusing while a server is registered', async () => {
    const live = path.join(s.dir, 'tollgate.db');
    const { id } = await s.account('startup');
    const credit = (amount: string) =>
      s.graphql(
        'mutation($a: ID!, $m: Decimal!) { creditWallet(input: {accountId: $a, amount: $m, type: bonus, description: "restore test"}) { id } }',
        { a: id, m: amount },
        ADMIN_TOKEN,
      );
    await credit('10');
    const backup = path.join(out, 'before.db');
    expect((await cli({ DATABASE_URL: `sqlite:${live}` }, 'db', 'backup', '--out', backup)).code).toBe(0);
    await credit('5');
    // What a server killed now leaves: the database file with its WAL and shared memory beside it.
    const crashed = path.join(out, 'crashed');
    mkdirSync(crashed);
    for (const suffix of ['', '-wal', '-shm'])
      if (existsSync(live + suffix)) copyFileSync(live + suffix, path.join(crashed, `tollgate.db${suffix}`));
    expect(existsSync(path.join(crashed, 'tollgate.db-wal'))).toBe(true);
    const env = { DATABASE_URL: `sqlite:${path.join(crashed, 'tollgate.db')}` };
    // A restore under the server still running is refused, --force or not: it would lose what the server writes after.
    const underLive = await cli({ DATABASE_URL: `sqlite:${live}` }, 'db', 'restore', '--from', backup, '--force');
    expect([underLive.code, underLive.stderr]).toEqual([1, expect.stringMatching(/a server is serving .*: stop it first/)]);
    // The copy's server is this process: made a process that has ended, as a crashed server's is.
    const ended = spawnSync(process.execPath, ['-e', '0']).pid;
    const copyDb = new Database(path.join(crashed, 'tollgate.db'));
    copyDb.prepare('update billing_instances set pid = ?').run(ended);
    copyDb.close();

    const refused = await cli(env, 'db', 'restore', '--from', backup);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/a server is registered on .* stop it first; if it crashed, pass --force/);
    const restored = await cli(env, 'db', 'restore', '--from', backup, '--force', '--json');
    expect(restored.code).toBe(0);
    const report = JSON.parse(restored.stdout);
    expect(report).toMatchObject({ from: backup, database: path.join(crashed, 'tollgate.db') });
    expect(existsSync(path.join(crashed, 'tollgate.db-wal'))).toBe(false);
    // What it replaced is kept beside it, with its WAL: the 15 credited, readable as it was.
    expect(report.kept).toMatch(/tollgate\.db\.before-restore-/);
    const keptBalance = await cli({ DATABASE_URL: `sqlite:${report.kept}` }, 'wallet', 'balance', '--account', id, '--json');
    expect(Number(JSON.parse(keptBalance.stdout).balance)).toBe(15);
    const verify = await cli(env, 'ledger', 'verify', '--json');
    expect(JSON.parse(verify.stdout)).toEqual({ ok: true, problems: [] });
    const balance = await cli(env, 'wallet', 'balance', '--account', id, '--json');
    expect(Number(JSON.parse(balance.stdout).balance)).toBe(10);

    // Not a database, or PostgreSQL: said so, nothing touched.
    const junk = path.join(out, 'junk.db');
    writeFileSync(junk, 'not a database at all, but long enough to be read as one');
    const bad = await cli(env, 'db', 'restore', '--from', junk, '--force');
    expect([bad.code, bad.stderr]).toEqual([1, expect.stringContaining('is not a sound SQLite database')]);
    // A sound SQLite file of another program is not a backup: refused, the database untouched.
    const other = path.join(out, 'other.db');
    const notes = new Database(other);
    notes.exec("create table notes(x); insert into notes values ('hello')");
    notes.close();
    const foreign = await cli(env, 'db', 'restore', '--from', other, '--force');
    expect([foreign.code, foreign.stderr]).toEqual([
      1,
      expect.stringContaining(
        `${other} is not a tollgate database (no mikro_orm_migrations, accounts, wallets, wallet_transactions table)`,
      ),
    ]);
    expect(Number(JSON.parse((await cli(env, 'wallet', 'balance', '--account', id, '--json')).stdout).balance)).toBe(10);
    const pg = await cli({ DATABASE_URL: 'postgres://root@127.0.0.1:5432/test' }, 'db', 'restore', '--from', backup);
    // The README's procedure: an emptied schema, then pg_restore (--clean alone leaves a newer version's tables).
    expect([pg.code, pg.stderr]).toEqual([
      1,
      expect.stringContaining(`drop schema public cascade; create schema public') and run pg_restore --no-owner`),
    ]);
    expect(pg.stderr).not.toContain('--if-exists');
  });

  it('ledger verify reports a SQLite file whose index is broken, though every ledger invariant reads right', async () => {
    const copy = path.join(out, 'broken.db');
    expect((await cli({ DATABASE_URL: `sqlite:${path.join(s.dir, 'tollgate.db')}` }, 'db', 'backup', '--out', copy)).code).toBe(0);
    const db = new Database(copy, { readonly: true });
    const { rootpage } = db
      .prepare("select rootpage from sqlite_master where type = 'index' and tbl_name = 'notifications' limit 1")
      .get() as {
      rootpage: number;
    };
    const pageSize = db.pragma('page_size', { simple: true }) as number;
    db.close();
    // Garbles the root page of an index the ledger never reads: its rows and the ledger are untouched.
    const fd = openSync(copy, 'r+');
    writeSync(fd, Buffer.alloc(pageSize, 0xa5), 0, pageSize, (rootpage - 1) * pageSize);
    closeSync(fd);
    const verify = await cli({ DATABASE_URL: `sqlite:${copy}` }, 'ledger', 'verify', '--json');
    expect(verify.code).toBe(1);
    const report = JSON.parse(verify.stdout) as { ok: boolean; problems: string[] };
    expect(report.ok).toBe(false);
    expect(report.problems[0]).toMatch(/^the SQLite file: /);
  });

  it('writes a copy that names no server: the one serving the original does not serve the copy', async () => {
    const file = path.join(out, 'unregistered.db');
    expect((await cli({ DATABASE_URL: `sqlite:${path.join(s.dir, 'tollgate.db')}` }, 'db', 'backup', '--out', file)).code).toBe(0);
    const live = new Database(path.join(s.dir, 'tollgate.db'), { readonly: true });
    expect(live.prepare('select count(*) as n from billing_instances').get()).toEqual({ n: 1 });
    live.close();
    const copy = new Database(file, { readonly: true });
    expect(copy.prepare('select count(*) as n from billing_instances').get()).toEqual({ n: 0 });
    copy.close();
  });

  it('leaves nothing at --out when interrupted, rather than a part of a copy that would read as an empty database', async () => {
    // A tollgate database (the server's, copied) made big: the restore below takes only tollgate's.
    const big = path.join(out, 'big.db');
    const served = new Database(path.join(s.dir, 'tollgate.db'), { readonly: true });
    await served.backup(big);
    served.close();
    const db = new Database(big);
    db.prepare('delete from billing_instances').run();
    db.exec('create table filler (b blob)');
    const blob = Buffer.alloc(1024 * 1024, 1);
    const insert = db.prepare('insert into filler values (?)');
    db.transaction(() => {
      for (let i = 0; i < 150; i++) insert.run(blob);
    })();
    db.close();
    const target = path.join(out, 'cut.db');
    const child = spawn(process.execPath, ['bin/tollgate.js', 'db', 'backup', '--out', target], {
      env: { ...process.env, DATABASE_URL: `sqlite:${big}`, CONFIG: path.join(s.dir, 'config.yaml') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      if (/backup: \d+%/.test(stderr) && !child.killed) child.kill('SIGINT');
    });
    const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
    expect(code).toBe(130);
    expect(stderr).toContain(`backup interrupted: nothing was written to ${target}`);
    expect(readdirSync(out).filter((f) => f.startsWith('cut.db'))).toEqual([]);
  }, 60_000);

  it('leaves the database as it was when a restore is interrupted', async () => {
    const big = path.join(out, 'big.db');
    expect(existsSync(big)).toBe(true); // written by the test before
    const target = path.join(out, 'kept.db');
    const kept = new Database(target);
    kept.exec("create table mine (a text); insert into mine values ('still here')");
    kept.close();
    const before = readFileSync(target);
    const child = spawn(process.execPath, ['bin/tollgate.js', 'db', 'restore', '--from', big], {
      env: { ...process.env, DATABASE_URL: `sqlite:${target}`, CONFIG: path.join(s.dir, 'config.yaml') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    // The copy is on its way once its part file is there.
    await until(() => readdirSync(out).some((f) => f.startsWith('kept.db.partial-')));
    child.kill('SIGINT');
    const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
    expect([code, stderr]).toEqual([130, expect.stringContaining(`restore interrupted: ${target} is as it was`)]);
    expect(readFileSync(target).equals(before)).toBe(true);
    expect(readdirSync(out).filter((f) => f.startsWith('kept.db.'))).toEqual([]);
  }, 60_000);

  it('ledger verify refuses a database file that is not there, rather than verifying a new empty one', async () => {
    const missing = path.join(out, 'no-such-dir', 'typo.db');
    const verify = await cli({ DATABASE_URL: `sqlite:${missing}` }, 'ledger', 'verify');
    expect([verify.code, verify.stderr]).toEqual([1, expect.stringContaining(`no database at ${missing}`)]);
    expect(existsSync(path.dirname(missing))).toBe(false);
  });

  it('refuses to overwrite a file, and says what to use for PostgreSQL', async () => {
    const file = path.join(out, 'exists.db');
    const first = await cli({ DATABASE_URL: `sqlite:${path.join(s.dir, 'tollgate.db')}` }, 'db', 'backup', '--out', file);
    expect(first.code).toBe(0);
    expect(existsSync(file)).toBe(true);
    const again = await cli({ DATABASE_URL: `sqlite:${path.join(s.dir, 'tollgate.db')}` }, 'db', 'backup', '--out', file);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('already exists');
    const pg = await cli({ DATABASE_URL: 'postgres://root@127.0.0.1:5432/test' }, 'db', 'backup', '--out', path.join(out, 'pg.dump'));
    expect(pg.code).toBe(1);
    expect(pg.stderr).toContain('pg_dump');
  });
});
