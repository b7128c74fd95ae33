// `tollgate db backup --out FILE`: a copy of the SQLite database made while the server serves
// billed calls, which opens, passes `ledger verify` and holds the same balances.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../src/cli.js';
import { ADMIN_TOKEN, startTestServer, type TestServer } from './support/harness.js';

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
