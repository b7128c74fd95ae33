// The operator CLI as an operator runs it: `node bin/tollgate.js …` in its own process, on the
// SQLite file named by DATABASE_URL, checked against the domain service the server uses.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { MikroORM } from '@mikro-orm/core';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeDatabase, openDatabase } from '../src/db/orm.js';
import { AccountsService } from '../src/domain/accounts/accounts-service.js';

const BIN = fileURLToPath(new URL('../bin/tollgate.js', import.meta.url));

interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

function tollgate(databaseUrl: string, ...args: string[]): Promise<RunResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { env: { ...process.env, DATABASE_URL: databaseUrl, TOLLGATE_DEBUG: '' }, timeout: 20_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

const CREATING = /^tollgate: no database at .* \(DATABASE_URL\): creating a new one\n/;

async function tollgateJson<T>(databaseUrl: string, ...args: string[]): Promise<T> {
  const result = await tollgate(databaseUrl, ...args);
  // The first command on a new file says it creates it; nothing else goes to stderr.
  expect(result.stderr.replace(CREATING, '')).toBe('');
  expect(result.code).toBe(0);
  return JSON.parse(result.stdout) as T;
}

interface CreatedAccountJson {
  account: { id: string; email: string; tier: string };
  api_key: string;
  key_id: string;
}

describe('tollgate CLI', () => {
  let dir: string;
  let url: string;

  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'tollgate-cli-'));
    url = `sqlite:${path.join(dir, 'data', 'tollgate.db')}`;
  });

  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  describe('against a database the test also holds open', () => {
    let orm: MikroORM;
    let accounts: AccountsService;

    beforeAll(async () => {
      // The CLI creates the file and its schema on first use; the server-side view opens it after.
      await tollgateJson(url, 'accounts', 'create', '--email', 'first@example.com', '--tier', 'free', '--json');
      orm = await openDatabase(url);
      accounts = new AccountsService(orm);
    });

    afterAll(async () => {
      if (orm) await closeDatabase(orm);
    });

    it('creates an account and a key, and a key revoked from the CLI is refused on the next request', async () => {
      const created = await tollgateJson<CreatedAccountJson>(
        url,
        'accounts',
        'create',
        '--email',
        'a@b.c',
        '--tier',
        'developer',
        '--json',
      );
      expect(created.account).toMatchObject({ email: 'a@b.c', tier: 'developer' });
      expect(created.account.id).toMatch(/^acct_/);
      expect(created.api_key).toMatch(/^ask_[0-9A-Za-z]{38}$/);
      // The set-password link the plain output prints is in the JSON too, for scripts.
      expect((created as unknown as { set_password_url: string }).set_password_url).toMatch(/^https?:\/\/.+\/dashboard\/\S+/);

      const key = await tollgateJson<{ id: string; api_key: string }>(
        url,
        'keys',
        'create',
        '--account',
        created.account.id,
        '--name',
        'deploy',
        '--json',
      );
      expect(key.id).toMatch(/^key_/);
      expect((await accounts.authenticate(`Bearer ${key.api_key}`)).account.id).toBe(created.account.id);

      const revoked = await tollgate(url, 'keys', 'revoke', key.id);
      expect(revoked).toMatchObject({ code: 0, stderr: '' });
      expect(revoked.stdout).toContain(key.id);
      expect(revoked.stdout).not.toContain(key.api_key);
      expect(revoked.stdout).toMatch(/^Revoked API key /);
      const again = await tollgate(url, 'keys', 'revoke', key.id);
      expect(again).toMatchObject({ code: 0, stderr: '' });
      expect(again.stdout).toMatch(/was already revoked, at \d{4}-\d{2}-\d{2}T/);

      await expect(accounts.authenticate(`Bearer ${key.api_key}`)).rejects.toMatchObject({
        code: 'invalid_api_key',
        message: 'The API key has been revoked.',
      });
      // The account's first key is untouched.
      expect((await accounts.authenticate(`Bearer ${created.api_key}`)).keyId).toBe(created.key_id);
    });

    it('creates a key with an expiry and lists keys by prefix and last four characters only', async () => {
      const created = await tollgateJson<CreatedAccountJson>(
        url,
        'accounts',
        'create',
        '--email',
        'list@example.com',
        '--tier',
        'startup',
        '--json',
      );
      const key = await tollgateJson<{ id: string; api_key: string }>(
        url,
        'keys',
        'create',
        '--account',
        created.account.id,
        '--expires-at',
        '2099-01-01T00:00:00Z',
        '--json',
      );
      const list = await tollgateJson<Array<{ id: string; display: string; expires_at: string | null; revoked_at: string | null }>>(
        url,
        'keys',
        'list',
        '--account',
        created.account.id,
        '--json',
      );
      expect(list.map((k) => k.id)).toEqual([created.key_id, key.id]);
      expect(list[1]).toMatchObject({
        display: `${key.api_key.slice(0, 12)}…${key.api_key.slice(-4)}`,
        expires_at: '2099-01-01T00:00:00.000Z',
        revoked_at: null,
      });

      const human = await tollgate(url, 'keys', 'list', '--account', created.account.id);
      expect(human.code).toBe(0);
      for (const secret of [created.api_key, key.api_key]) {
        expect(human.stdout).not.toContain(secret);
        expect(JSON.stringify(list)).not.toContain(secret);
      }
      expect(human.stdout).toContain(key.id);
    });

    it('changes the tier of an account', async () => {
      const created = await tollgateJson<CreatedAccountJson>(
        url,
        'accounts',
        'create',
        '--email',
        'tier@example.com',
        '--tier',
        'free',
        '--json',
      );
      const result = await tollgate(url, 'accounts', 'set-tier', '--account', created.account.id, '--tier', 'enterprise');
      expect(result).toMatchObject({ code: 0, stderr: '' });
      expect((await accounts.getAccount(created.account.id)).tier).toBe('enterprise');
    });

    it('flags and unflags an operator with set-admin, printing one line of JSON with --json', async () => {
      const created = await tollgateJson<CreatedAccountJson>(
        url,
        'accounts',
        'create',
        '--email',
        'operator@example.com',
        '--tier',
        'free',
        '--json',
      );
      const id = created.account.id;
      const on = await tollgate(url, 'accounts', 'set-admin', '--account', id, '--json');
      expect(on).toMatchObject({ code: 0, stderr: '' });
      expect(on.stdout).toMatch(/^[^\n]+\n$/);
      expect(JSON.parse(on.stdout)).toEqual({ account_id: id, admin: true });
      expect(await tollgateJson(url, 'accounts', 'set-admin', '--account', id, '--off', '--json')).toEqual({
        account_id: id,
        admin: false,
      });
      expect((await tollgateJson<any>(url, 'accounts', 'show', id, '--json')).account.operator).toBe(false);
      expect((await tollgate(url, 'accounts', 'show', id)).stdout).not.toContain('  operator yes');
      const text = await tollgate(url, 'accounts', 'set-admin', '--account', id);
      expect(text).toMatchObject({ code: 0, stderr: '', stdout: `${id} is now an operator.\n` });
      // Who is an operator can be read back.
      expect((await tollgateJson<any>(url, 'accounts', 'show', id, '--json')).account.operator).toBe(true);
      expect((await tollgate(url, 'accounts', 'show', id)).stdout).toContain('  operator yes:');
      const unknown = await tollgate(url, 'accounts', 'set-admin', '--account', 'acct_nope', '--json');
      expect(unknown).toMatchObject({ code: 1, stdout: '', stderr: "error: No account with id 'acct_nope'.\n" });
    });
  });

  it('prints its version with --version', async () => {
    const r = await tollgate(url, '--version');
    expect(r).toMatchObject({ code: 0, stderr: '' });
    const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
    expect(r.stdout.trim()).toBe(version);
  });

  it('lists accounts and shows one, as text and as JSON, by id or by e-mail address', async () => {
    const listUrl = `sqlite:${path.join(dir, 'list', 'tollgate.db')}`;
    const a = await tollgateJson<CreatedAccountJson>(
      listUrl,
      'accounts',
      'create',
      '--email',
      'ada@example.com',
      '--tier',
      'developer',
      '--json',
    );
    const b = await tollgateJson<CreatedAccountJson>(
      listUrl,
      'accounts',
      'create',
      '--email',
      'bob@example.com',
      '--tier',
      'free',
      '--json',
    );
    const listed = await tollgateJson<{ accounts: { id: string; email: string; tier: string; created_at: string }[]; has_more: boolean }>(
      listUrl,
      'accounts',
      'list',
      '--json',
    );
    expect(listed.accounts.map((x) => [x.id, x.email, x.tier])).toEqual([
      [a.account.id, 'ada@example.com', 'developer'],
      [b.account.id, 'bob@example.com', 'free'],
    ]);
    expect(listed.has_more).toBe(false);
    const firstPage = await tollgateJson<{ accounts: { id: string }[]; has_more: boolean }>(
      listUrl,
      'accounts',
      'list',
      '--limit',
      '1',
      '--json',
    );
    expect(firstPage).toEqual({ accounts: [expect.objectContaining({ id: a.account.id })], has_more: true });
    const text = await tollgate(listUrl, 'accounts', 'list');
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^ID\s+EMAIL\s+TIER\s+CREATED/);
    expect(text.stdout).toContain(`${b.account.id}  bob@example.com`);

    const shown = await tollgateJson<any>(listUrl, 'accounts', 'show', 'ADA@example.com', '--json');
    expect(shown.account).toMatchObject({ id: a.account.id, email: 'ada@example.com', tier: 'developer' });
    expect(shown.wallet).toEqual({ balance: 0, held: 0, currency: 'USD' });
    expect(shown.api_keys).toEqual([expect.objectContaining({ id: a.key_id, revoked_at: null })]);
    const shownText = await tollgate(listUrl, 'accounts', 'show', a.account.id);
    expect(shownText.code).toBe(0);
    expect(shownText.stdout).toContain('ada@example.com');
    expect(shownText.stdout).toContain('wallet   0 USD');
    expect(shownText.stdout).toContain(a.key_id);
    expect(shownText.stdout).not.toContain(a.api_key);
    const unknown = await tollgate(listUrl, 'accounts', 'show', 'acct_nope');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe("error: No account with id 'acct_nope'.\n");
  });

  it('refuses a second account with the same e-mail address in another case, with one clear line', async () => {
    const dupUrl = `sqlite:${path.join(dir, 'dup', 'tollgate.db')}`;
    await tollgateJson<CreatedAccountJson>(dupUrl, 'accounts', 'create', '--email', 'Same@Example.com', '--tier', 'free', '--json');
    const again = await tollgate(dupUrl, 'accounts', 'create', '--email', 'same@example.COM', '--tier', 'developer', '--json');
    expect(again.code).toBe(1);
    expect(again.stdout).toBe('');
    expect(again.stderr).toBe(
      'error: An account with the e-mail address same@example.COM already exists (addresses are compared without regard to case).\n',
    );
    const listed = await tollgateJson<{ accounts: unknown[] }>(dupUrl, 'accounts', 'list', '--json');
    expect(listed.accounts).toHaveLength(1);
  });

  it('reports errors as one line on stderr with exit code 1 and no stack trace', async () => {
    const unknownKey = await tollgate(url, 'keys', 'revoke', 'key_doesnotexist0000000');
    expect(unknownKey.code).toBe(1);
    expect(unknownKey.stdout).toBe('');
    expect(unknownKey.stderr).toBe("error: No API key with id 'key_doesnotexist0000000'.\n");

    const badEmail = await tollgate(url, 'accounts', 'create', '--email', 'nope', '--tier', 'free', '--json');
    expect(badEmail.code).toBe(1);
    expect(badEmail.stderr.trim().split('\n')).toHaveLength(1);

    const badTier = await tollgate(url, 'accounts', 'create', '--email', 'x@y.z', '--tier', 'gold');
    expect(badTier.code).toBe(1);
    expect(badTier.stderr).toContain('free, developer, startup, enterprise');

    const badDate = await tollgate(url, 'keys', 'create', '--account', 'acct_x', '--expires-at', 'tomorrow');
    expect(badDate.code).toBe(1);
    expect(badDate.stderr).toMatch(/^error: --expires-at must be an ISO 8601/);
    // What JavaScript's Date would read as something else (2 March; the year 2001) is refused too.
    for (const date of ['2027-02-30', '1', '2027-01-31T24:00:00Z']) {
      const r = await tollgate(url, 'keys', 'create', '--account', 'acct_x', '--expires-at', date);
      expect([r.code, r.stderr], date).toEqual([1, expect.stringMatching(/^error: --expires-at must be an ISO 8601/)]);
    }

    for (const result of [unknownKey, badEmail, badTier, badDate]) expect(result.stderr).not.toMatch(/\n\s+at /);
  });

  it("says when it creates a new database, and refuses a folder, a file that is no database and another program's database, in one line", async () => {
    const fresh = path.join(dir, 'typo', 'tollgate.db');
    const created = await tollgate(`sqlite:${fresh}`, 'accounts', 'list');
    expect(created.code).toBe(0);
    expect(created.stderr).toBe(`tollgate: no database at ${fresh} (DATABASE_URL): creating a new one\n`);
    // Once there, nothing more is said.
    expect((await tollgate(`sqlite:${fresh}`, 'accounts', 'list')).stderr).toBe('');
    // A database an older tollgate made (its last migration undone): the upgrade is said, on stderr.
    const older = new Database(fresh);
    older.exec(
      "alter table billing_instances drop column tiers_digest; alter table billing_instances drop column config_path; delete from mikro_orm_migrations where name like '%0016%'",
    );
    older.close();
    const upgraded = await tollgate(`sqlite:${fresh}`, 'accounts', 'list');
    expect([upgraded.code, upgraded.stdout]).toEqual([0, expect.any(String)]);
    expect(upgraded.stderr).toMatch(
      /^tollgate: upgrading the database \(DATABASE_URL\): 1 migration to apply \(.*0016.*\); a tollgate older than this one cannot start on it afterwards\n$/,
    );
    expect((await tollgate(`sqlite:${fresh}`, 'accounts', 'list')).stderr).toBe('');

    const folder = await tollgate(`sqlite:${dir}`, 'accounts', 'list');
    expect([folder.code, folder.stderr]).toEqual([
      1,
      `error: DATABASE_URL=sqlite:${dir}: ${dir} is a directory: name the database file (e.g. DATABASE_URL=sqlite:${path.join(dir, 'tollgate.db')})\n`,
    ]);
    const text = path.join(dir, 'model.gguf');
    writeFileSync(text, 'GGUF and then some bytes that are no SQLite header at all, long enough');
    const notDb = await tollgate(`sqlite:${text}`, 'accounts', 'list');
    expect([notDb.code, notDb.stderr]).toEqual([
      1,
      `error: DATABASE_URL=sqlite:${text}: ${text} is not a SQLite database: name another file\n`,
    ]);
    const other = path.join(dir, 'notes.db');
    const notes = new Database(other);
    notes.exec("create table notes(x); insert into notes values ('hello')");
    notes.close();
    const foreign = await tollgate(`sqlite:${other}`, 'accounts', 'list');
    expect(foreign.code).toBe(1);
    expect(foreign.stderr).toBe(
      `error: DATABASE_URL=sqlite:${other}: the SQLite file holds another program's tables (notes) and none of tollgate's: refusing to add tollgate's to it; set DATABASE_URL to a new file or a tollgate database\n`,
    );
    const untouched = new Database(other, { readonly: true });
    expect(untouched.prepare("select name from sqlite_master where type = 'table'").all()).toEqual([{ name: 'notes' }]);
    untouched.close();
  });

  it('lets several processes open a new database and write to it at the same time', async () => {
    const fresh = `sqlite:${path.join(dir, 'concurrent', 'tollgate.db')}`;
    const results = await Promise.all(
      Array.from({ length: 4 }, (_, i) =>
        tollgate(fresh, 'accounts', 'create', '--email', `p${i}@example.com`, '--tier', 'free', '--json'),
      ),
    );
    for (const r of results) expect([r.code, r.stderr.replace(CREATING, '')]).toEqual([0, '']);
    const ids = results.map((r) => (JSON.parse(r.stdout) as CreatedAccountJson).account.id);

    const orm = await openDatabase(fresh);
    try {
      expect((await new AccountsService(orm).getAccountsByIds(ids)).map((a) => a.id)).toEqual(ids);
    } finally {
      await closeDatabase(orm);
    }
  });
});
