// The operator's per-account rate-limit overrides, set and shown with the CLI as an operator runs
// it (`node bin/tollgate.js limits …` in its own process) and read back with the key, the way the
// server reads them on every request.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeDatabase, openDatabase } from '../src/db/orm.js';
import { AccountsService } from '../src/domain/accounts/accounts-service.js';

const BIN = fileURLToPath(new URL('../bin/tollgate.js', import.meta.url));

let dir: string;
let databaseUrl: string;

function tollgate(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { env: { ...process.env, DATABASE_URL: databaseUrl, CONFIG: '', TOLLGATE_DEBUG: '' }, timeout: 20_000 },
      (error, stdout, stderr) => {
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr });
      },
    );
  });
}

async function json<T = any>(...args: string[]): Promise<T> {
  const r = await tollgate(...args);
  // The first command on a new file says it creates it; nothing else goes to stderr.
  expect(r.stderr.replace(/^tollgate: no database at .* \(DATABASE_URL\): creating a new one\n/, '')).toBe('');
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout) as T;
}

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'tollgate-rl-cli-'));
  databaseUrl = `sqlite:${path.join(dir, 'tollgate.db')}`;
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('tollgate limits', () => {
  it("overrides an account's RPM, keeps the tier's TPM, and goes back to the tier with 'tier'", async () => {
    const created = await json<{ account: { id: string }; api_key: string }>(
      'accounts',
      'create',
      '--email',
      'limits@example.com',
      '--tier',
      'free',
      '--json',
    );
    const id = created.account.id;
    expect(await json('limits', 'show', '--account', id, '--json')).toEqual({
      account_id: id,
      tier: 'free',
      rpm: 20,
      tpm: 40_000,
      override: { rpm: null, tpm: null },
    });
    expect(await json('limits', 'set', '--account', id, '--rpm', '7', '--json')).toEqual({
      account_id: id,
      tier: 'free',
      rpm: 7,
      tpm: 40_000,
      override: { rpm: 7, tpm: null },
    });
    expect(await json('limits', 'set', '--account', id, '--tpm', '90000', '--json')).toMatchObject({
      rpm: 7,
      tpm: 90_000,
      override: { rpm: 7, tpm: 90_000 },
    });

    // The server reads the override with the key, on every request.
    const orm = await openDatabase(databaseUrl);
    try {
      const accounts = new AccountsService(orm);
      expect((await accounts.authenticate(`Bearer ${created.api_key}`)).rateLimitOverride).toEqual({ rpm: 7, tpm: 90_000 });
      expect(await json('limits', 'set', '--account', id, '--rpm', 'tier', '--tpm', 'tier', '--json')).toMatchObject({
        rpm: 20,
        tpm: 40_000,
        override: { rpm: null, tpm: null },
      });
      expect((await accounts.authenticate(`Bearer ${created.api_key}`)).rateLimitOverride).toEqual({ rpm: null, tpm: null });
    } finally {
      await closeDatabase(orm);
    }
    const text = await tollgate('limits', 'show', '--account', id);
    expect(text.stdout).toBe(`Account ${id}: 20 requests/min (tier free), 40000 tokens/min (tier free).\n`);
  }, 120_000); // CLI processes, each a few seconds on a busy machine

  it('refuses a limit that is not a positive integer, and an unknown account', async () => {
    const created = await json<{ account: { id: string } }>(
      'accounts',
      'create',
      '--email',
      'bad@example.com',
      '--tier',
      'developer',
      '--json',
    );
    for (const bad of ['0', '-5', '1.5', 'lots']) {
      const r = await tollgate('limits', 'set', '--account', created.account.id, '--rpm', bad);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain('--rpm must be a positive integer');
    }
    const none = await tollgate('limits', 'set', '--account', created.account.id);
    expect(none.code).toBe(1);
    expect(none.stderr).toContain('give --rpm, --tpm or both');
    const unknown = await tollgate('limits', 'set', '--account', 'acct_nope', '--rpm', '5');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("No account with id 'acct_nope'");
  }, 120_000); // seven CLI processes, each a few seconds on a busy machine
});
