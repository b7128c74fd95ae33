// Accounts and API keys on a real database: SQLite (a temp file) always, PostgreSQL too when
// TEST_DATABASE_URL is set (each run gets a fresh database, dropped afterwards).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { MikroORM } from '@mikro-orm/core';
import { AsyncLocalStorage } from 'node:async_hooks';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  closeDatabase,
  DatabaseLocationError,
  databaseKind,
  getKnex,
  openDatabase,
  parseDatabaseUrl,
  withoutCredentials,
} from '../src/db/orm.js';
import { MIGRATIONS } from '../src/db/migrations/index.js';
import { AccountsService, type Tier } from '../src/domain/accounts/accounts-service.js';
import { TIER_DEFAULTS } from '../src/domain/accounts/tiers.js';
import { BillingService } from '../src/domain/billing/billing-service.js';
import { DomainError } from '../src/domain/errors.js';
import { createLogger } from '../src/logger.js';
import { generateApiKey } from '../src/domain/keys/key-format.js';
import { ENTITIES } from '../src/entities/index.js';
import { missing } from './support/requirements.js';

interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

interface Backend {
  name: string;
  create(): Promise<TestDatabase>;
}

const backends: Backend[] = [
  {
    name: 'SQLite',
    async create() {
      const dir = mkdtempSync(path.join(tmpdir(), 'tollgate-test-'));
      // A nested path: opening the database creates the missing directories.
      return {
        url: `sqlite:${path.join(dir, 'nested', 'dir', 'tollgate.db')}`,
        drop: async () => rmSync(dir, { recursive: true, force: true }),
      };
    },
  },
];

const adminUrl = process.env.TEST_DATABASE_URL;
missing('PostgreSQL (set TEST_DATABASE_URL)', Boolean(adminUrl));
if (adminUrl) {
  backends.push({
    name: 'PostgreSQL',
    async create() {
      const name = `tollgate_test_${randomBytes(6).toString('hex')}`;
      const { PostgreSqlDriver } = await import('@mikro-orm/postgresql');
      const admin = await MikroORM.init({ driver: PostgreSqlDriver, clientUrl: adminUrl, entities: ENTITIES, ensureDatabase: false });
      await admin.em.getConnection().execute(`create database "${name}"`);
      const url = new URL(adminUrl);
      url.pathname = `/${name}`;
      return {
        url: url.toString(),
        async drop() {
          await admin.em.getConnection().execute(`drop database if exists "${name}" with (force)`);
          await admin.close(true);
        },
      };
    },
  });
}

const originalRun = AsyncLocalStorage.prototype.run;
const originalEnterWith = AsyncLocalStorage.prototype.enterWith;

/** Runs `fn` and returns how many SQL statements went to the database meanwhile. */
async function countQueries(orm: MikroORM, fn: () => Promise<unknown>): Promise<number> {
  const knex = getKnex(orm);
  let count = 0;
  const listener = () => count++;
  knex.on('query', listener);
  try {
    await fn();
  } finally {
    knex.removeListener('query', listener);
  }
  return count;
}

async function expectAuthError(promise: Promise<unknown>, message: RegExp | string, secret?: string): Promise<DomainError> {
  const error = await promise.then(
    () => {
      throw new Error('expected authentication to fail');
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(DomainError);
  const domainError = error as DomainError;
  expect(domainError.code).toBe('invalid_api_key');
  expect(domainError.message).toMatch(message);
  if (secret) {
    expect(domainError.message).not.toContain(secret);
    expect(domainError.message).not.toContain(secret.slice(4, 16));
  }
  return domainError;
}

/** A key that fails its checksum: the last character changed. */
function withBadChecksum(key: string): string {
  const last = key.at(-1) === 'A' ? 'B' : 'A';
  return key.slice(0, -1) + last;
}

describe.each(backends)('accounts and API keys on $name', (backend) => {
  let db: TestDatabase;
  let orm: MikroORM;
  let accounts: AccountsService;
  let billing: BillingService;
  let counter = 0;

  const seedAccount = (tier: Tier = 'developer') => accounts.createAccount({ email: `user${++counter}@example.com`, tier });

  beforeAll(async () => {
    db = await backend.create();
    orm = await openDatabase(db.url);
    accounts = new AccountsService(orm);
    billing = new BillingService({
      orm,
      tiers: TIER_DEFAULTS,
      settings: { hold_expiry_seconds: 900, sweep_interval_seconds: 30, instance_timeout_seconds: 90 },
      logger: createLogger('silent'),
    });
  });

  afterAll(async () => {
    if (orm) await closeDatabase(orm);
    await db?.drop();
  });

  it('keeps one account per e-mail address whatever its case, also when two are created at once', async () => {
    const first = await accounts.createAccount({ email: 'Case@Example.com', tier: 'free' });
    await expect(accounts.createAccount({ email: 'case@example.com', tier: 'free' })).rejects.toMatchObject({
      code: 'email_taken',
      param: 'email',
    });
    expect((await accounts.findByEmail('CASE@EXAMPLE.COM'))?.id).toBe(first.account.id);
    // Past the service's own check, the unique index on lower(email) decides a race.
    const raced = await Promise.allSettled(
      ['Race@example.com', 'race@EXAMPLE.com', 'RACE@example.com'].map((email) => accounts.createAccount({ email, tier: 'free' })),
    );
    expect(raced.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    for (const r of raced) if (r.status === 'rejected') expect(r.reason).toMatchObject({ code: 'email_taken' });
    await expect(
      getKnex(orm).raw("insert into accounts (id, email, tier, created_at) values ('acct_raw', 'RACE@example.COM', 'free', ?)", [
        new Date(),
      ]),
    ).rejects.toThrow(/unique|duplicate/i);
  });

  it('runs the migrations at open, records them, and finds nothing to do on the next open', async () => {
    expect(databaseKind(orm)).toBe(backend.name === 'SQLite' ? 'sqlite' : 'postgresql');
    const knex = getKnex(orm);
    const recorded = await knex('mikro_orm_migrations').select('name').orderBy('id');
    expect(recorded.map((r: { name: string }) => r.name)).toEqual(MIGRATIONS.map((m) => m.name));
    for (const table of ['accounts', 'api_keys']) expect(await knex.schema.hasTable(table)).toBe(true);

    const again = await openDatabase(db.url);
    try {
      expect(await again.getMigrator().getPendingMigrations()).toEqual([]);
      const row = await getKnex(again)('mikro_orm_migrations').count({ n: '*' }).first();
      expect(Number(row?.n)).toBe(MIGRATIONS.length);
    } finally {
      await closeDatabase(again);
    }
  });

  it('refuses a database a newer tollgate migrated (a migration this code does not know), naming it', async () => {
    const fresh = await backend.create();
    try {
      const first = await openDatabase(fresh.url);
      await getKnex(first)('mikro_orm_migrations').insert({ name: '0099-from-a-newer-release' });
      await closeDatabase(first);
      await expect(openDatabase(fresh.url)).rejects.toThrow(
        /^the database was migrated by a newer tollgate \(0099-from-a-newer-release\), which this version does not know: run that version or a newer one, or restore a backup made before it$/,
      );
    } finally {
      await fresh.drop();
    }
  });

  // SQLite's equivalent (several processes) is in cli.test.ts: better-sqlite3 waits for locks
  // synchronously, so concurrent opens have to come from separate processes there.
  it.runIf(backend.name === 'PostgreSQL')('migrates a new database once when several connections open it at the same time', async () => {
    const fresh = await backend.create();
    try {
      const orms = await Promise.all(Array.from({ length: 4 }, () => openDatabase(fresh.url)));
      try {
        const rows = await getKnex(orms[0]!)('mikro_orm_migrations').select('name');
        expect(rows.map((r: { name: string }) => r.name)).toEqual(MIGRATIONS.map((m) => m.name));
      } finally {
        await Promise.all(orms.map(closeDatabase));
      }
    } finally {
      await fresh.drop();
    }
  });

  it('creates an account with a first key that authenticates as that account', async () => {
    const created = await accounts.createAccount({ email: ' ada@example.com ', tier: 'startup' });
    expect(created.account).toMatchObject({ email: 'ada@example.com', tier: 'startup' });
    expect(created.account.id).toMatch(/^acct_[0-9A-Za-z]{20}$/);
    expect(created.keyId).toMatch(/^key_[0-9A-Za-z]{20}$/);
    expect(created.apiKey).toMatch(/^ask_[0-9A-Za-z]{38}$/);

    const principal = await accounts.authenticate(`Bearer ${created.apiKey}`);
    expect(principal.keyId).toBe(created.keyId);
    expect(principal.account).toEqual(created.account);
    expect(principal.account.createdAt).toBeInstanceOf(Date);
    expect(await accounts.getAccount(created.account.id)).toEqual(created.account);
  });

  it('accepts the Bearer scheme in any case and surrounding whitespace', async () => {
    const { apiKey, keyId } = await seedAccount();
    expect((await accounts.authenticate(`bearer ${apiKey}`)).keyId).toBe(keyId);
    expect((await accounts.authenticate(`  BEARER   ${apiKey}  `)).keyId).toBe(keyId);
  });

  // Its speed is measured by `npm run bench`, never by timing in tests (the machine is shared).
  it('authenticates with a single query', async () => {
    const { apiKey } = await seedAccount();
    expect(await countQueries(orm, () => accounts.authenticate(`Bearer ${apiKey}`))).toBe(1);
  });

  it('refuses a malformed e-mail or an unknown tier with invalid_value', async () => {
    await expect(accounts.createAccount({ email: 'not-an-email', tier: 'free' })).rejects.toMatchObject({
      code: 'invalid_value',
      param: 'email',
    });
    await expect(accounts.createAccount({ email: 'a@b.c', tier: 'gold' })).rejects.toMatchObject({ code: 'invalid_value', param: 'tier' });
  });

  it('refuses a key with a bad checksum without touching the database', async () => {
    const { apiKey } = await seedAccount();
    const typo = withBadChecksum(apiKey);
    const queries = await countQueries(orm, () =>
      expectAuthError(accounts.authenticate(`Bearer ${typo}`), 'Incorrect API key provided.', typo),
    );
    expect(queries).toBe(0);
  });

  it('refuses a missing header, another scheme or a malformed key without touching the database', async () => {
    const key = generateApiKey();
    const queries = await countQueries(orm, async () => {
      for (const missing of [undefined, null, '', '   ']) {
        await expectAuthError(accounts.authenticate(missing), /No API key provided.*Authorization: Bearer ask_/);
      }
      await expectAuthError(accounts.authenticate(`Basic ${key}`), /Bearer scheme/, key);
      await expectAuthError(accounts.authenticate(key), /Bearer scheme/, key);
      await expectAuthError(accounts.authenticate('Bearer '), /Bearer scheme/);
      await expectAuthError(
        accounts.authenticate('Bearer sk-proj-abcdef0123456789'),
        'Incorrect API key provided.',
        'sk-proj-abcdef0123456789',
      );
      await expectAuthError(accounts.authenticate(`Bearer ${key} ${key}`), 'Incorrect API key provided.', key);
    });
    expect(queries).toBe(0);
  });

  it('refuses an unknown key with a valid checksum, without repeating the key', async () => {
    const unknown = generateApiKey();
    await expectAuthError(accounts.authenticate(`Bearer ${unknown}`), 'Incorrect API key provided.', unknown);
  });

  it('refuses a revoked key on its next request, even when another instance revoked it', async () => {
    const { apiKey, keyId } = await seedAccount();
    expect((await accounts.authenticate(`Bearer ${apiKey}`)).keyId).toBe(keyId);

    // Another process (the CLI, a second server) has its own connection; nothing is cached here.
    const otherOrm = await openDatabase(db.url);
    try {
      await new AccountsService(otherOrm).revokeKey(keyId);
    } finally {
      await closeDatabase(otherOrm);
    }
    await expectAuthError(accounts.authenticate(`Bearer ${apiKey}`), 'The API key has been revoked.', apiKey);
  });

  it('revokes idempotently, keeping the first revocation time, and reports unknown keys as not_found', async () => {
    const { keyId } = await seedAccount();
    let clock = new Date('2031-03-01T10:00:00.000Z');
    const clocked = new AccountsService(orm, { now: () => clock });
    const first = await clocked.revokeKey(keyId);
    expect(first.revokedAt?.toISOString()).toBe('2031-03-01T10:00:00.000Z');
    clock = new Date('2031-03-02T10:00:00.000Z');
    const second = await clocked.revokeKey(keyId);
    expect(second.revokedAt?.toISOString()).toBe('2031-03-01T10:00:00.000Z');
    await expect(accounts.revokeKey('key_doesnotexist0000000')).rejects.toMatchObject({ code: 'not_found' });
  });

  it('refuses a key once it has expired', async () => {
    const { account } = await seedAccount();
    const expiresAt = new Date(Date.now() + 60 * 60 * 1000);
    const { apiKey, id } = await accounts.createKey(account.id, { name: 'ci', expiresAt });
    expect((await accounts.authenticate(`Bearer ${apiKey}`)).keyId).toBe(id);

    const later = new AccountsService(orm, { now: () => new Date(expiresAt.getTime() + 1) });
    await expectAuthError(later.authenticate(`Bearer ${apiKey}`), 'The API key has expired.', apiKey);
    const atExpiry = new AccountsService(orm, { now: () => expiresAt });
    await expectAuthError(atExpiry.authenticate(`Bearer ${apiKey}`), 'The API key has expired.', apiKey);
  });

  it('refuses to create a key for an unknown account, or one that expires in the past', async () => {
    await expect(accounts.createKey('acct_doesnotexist000000')).rejects.toMatchObject({ code: 'not_found' });
    const { account } = await seedAccount();
    await expect(accounts.createKey(account.id, { expiresAt: new Date(Date.now() - 1000) })).rejects.toMatchObject({
      code: 'invalid_value',
      param: 'expires_at',
    });
    await expect(accounts.createKey(account.id, { expiresAt: new Date('nope') })).rejects.toMatchObject({ code: 'invalid_value' });
  });

  it('lists keys with only their prefix and last four characters, never the secret or its digest', async () => {
    const { account, apiKey, keyId } = await seedAccount();
    const second = await accounts.createKey(account.id, { name: 'deploy' });
    await accounts.revokeKey(second.id);

    const list = await accounts.listKeys(account.id);
    expect(list.map((k) => k.id)).toEqual([keyId, second.id]);
    expect(list[0]).toEqual({
      id: keyId,
      display: `${apiKey.slice(0, 12)}…${apiKey.slice(-4)}`,
      name: null,
      createdAt: expect.any(Date),
      expiresAt: null,
      revokedAt: null,
      lastUsedAt: null,
    });
    expect(list[1]).toMatchObject({ name: 'deploy', revokedAt: expect.any(Date) });
    const text = JSON.stringify(list);
    for (const secret of [apiKey, second.apiKey]) expect(text).not.toContain(secret.slice(12, -4));
    expect(text).not.toMatch(/[0-9a-f]{64}/);
    await expect(accounts.listKeys('acct_doesnotexist000000')).rejects.toMatchObject({ code: 'not_found' });
  });

  it('writes accounts, keys, tiers and a billed call without entering an AsyncLocalStorage (which would switch on async hooks for good)', async () => {
    // On Node 20 the first AsyncLocalStorage run enables a promise hook for the rest of the
    // process; a unit-of-work flush does one. The writes must not.
    const entered: string[] = [];
    const record = () => {
      const stack = new Error().stack ?? '';
      if (stack.includes('@mikro-orm') || stack.includes('accounts-service') || stack.includes('domain/billing')) entered.push(stack);
    };
    const run = vi.spyOn(AsyncLocalStorage.prototype, 'run').mockImplementation(function (
      this: AsyncLocalStorage<unknown>,
      ...args: unknown[]
    ) {
      record();
      return Reflect.apply(originalRun, this, args) as never;
    });
    const enterWith = vi.spyOn(AsyncLocalStorage.prototype, 'enterWith').mockImplementation(function (
      this: AsyncLocalStorage<unknown>,
      store: unknown,
    ) {
      record();
      Reflect.apply(originalEnterWith, this, [store]);
    });
    try {
      const { account } = await seedAccount('free');
      const { id: keyId } = await accounts.createKey(account.id, { name: 'ci' });
      expect((await billing.setTier(account.id, 'startup')).tier).toBe('startup');
      // A billed call through the wallet store: credit, hold, settlement.
      await billing.creditWallet({ accountId: account.id, amount: 1_000_000_000n, type: 'bonus', description: 'test' });
      const ticket = await billing.admit({
        caller: { accountId: account.id, keyId, requestId: 'req_als' },
        model: {
          id: 'chat-als',
          category: 'chat',
          pricing: { input_price_per_million: 1, output_price_per_million: 2, currency: 'usd' },
        } as Parameters<BillingService['admit']>[0]['model'],
        promptTokens: 5,
        requestedOutputTokens: 5,
        maxOutputTokens: 16,
      });
      await ticket.settle({ promptTokens: 5, completionTokens: 5, totalTokens: 10 }, 'completed');
      expect(await billing.countOpenHolds(account.id)).toBe(0);
      await accounts.revokeKey(keyId);
    } finally {
      run.mockRestore();
      enterWith.mockRestore();
    }
    expect(entered).toEqual([]);
  });

  it('creates 50 keys concurrently for one account, all distinct and all usable', async () => {
    const { account } = await seedAccount();
    const created = await Promise.all(Array.from({ length: 50 }, (_, i) => accounts.createKey(account.id, { name: `k${i}` })));
    expect(new Set(created.map((k) => k.id)).size).toBe(50);
    expect(new Set(created.map((k) => k.apiKey)).size).toBe(50);
    expect(await accounts.listKeys(account.id)).toHaveLength(51);
    const principals = await Promise.all(created.map((k) => accounts.authenticate(`Bearer ${k.apiKey}`)));
    expect(principals.map((p) => p.keyId).sort()).toEqual(created.map((k) => k.id).sort());
    expect(principals.every((p) => p.account.id === account.id)).toBe(true);
  });

  it('loads many accounts in one query, in the order asked, leaving unknown ids out', async () => {
    const a = await seedAccount('free');
    const b = await seedAccount('enterprise');
    let result: Awaited<ReturnType<AccountsService['getAccountsByIds']>> = [];
    const queries = await countQueries(orm, async () => {
      result = await accounts.getAccountsByIds([b.account.id, 'acct_unknown0000000000000', a.account.id, b.account.id]);
    });
    expect(queries).toBe(1);
    expect(result).toEqual([b.account, a.account]);
    expect(await countQueries(orm, () => accounts.getAccountsByIds([]))).toBe(0);
    await expect(accounts.getAccount('acct_unknown0000000000000')).rejects.toMatchObject({ code: 'not_found' });
  });

  it('changes the tier that the next authentication sees', async () => {
    const { account, apiKey } = await seedAccount('free');
    expect(await billing.setTier(account.id, 'enterprise')).toMatchObject({ id: account.id, tier: 'enterprise' });
    expect((await accounts.authenticate(`Bearer ${apiKey}`)).account.tier).toBe('enterprise');
    await expect(billing.setTier(account.id, 'platinum')).rejects.toMatchObject({ code: 'invalid_value' });
    await expect(billing.setTier('acct_unknown0000000000000', 'free')).rejects.toMatchObject({ code: 'not_found' });
  });
});

describe('DATABASE_URL', () => {
  it('names a SQLite file, in memory, or a PostgreSQL server', () => {
    expect(parseDatabaseUrl('sqlite:./data/tollgate.db')).toEqual({ kind: 'sqlite', location: './data/tollgate.db' });
    expect(parseDatabaseUrl('sqlite::memory:')).toEqual({ kind: 'sqlite', location: ':memory:' });
    expect(parseDatabaseUrl('sqlite:///var/lib/tollgate.db')).toEqual({ kind: 'sqlite', location: '/var/lib/tollgate.db' });
    expect(parseDatabaseUrl('/var/lib/tollgate.db')).toEqual({ kind: 'sqlite', location: '/var/lib/tollgate.db' });
    expect(parseDatabaseUrl('postgres://u@h:5432/db')).toEqual({ kind: 'postgresql', location: 'postgres://u@h:5432/db' });
    expect(parseDatabaseUrl('postgresql://u@h/db')).toEqual({ kind: 'postgresql', location: 'postgresql://u@h/db' });
    expect(() => parseDatabaseUrl('mysql://u@h/db')).toThrow(/unsupported scheme/);
    expect(() => parseDatabaseUrl('sqlite:')).toThrow(/no SQLite file/);
  });

  it.runIf(process.env.TEST_DATABASE_URL)(
    'refuses a PostgreSQL database that does not exist, or a server it cannot reach, in one line, and creates nothing',
    async () => {
      const admin = new URL(process.env.TEST_DATABASE_URL!);
      const name = `tollgate_typo_${randomBytes(4).toString('hex')}`;
      const typo = new URL(admin);
      typo.pathname = `/${name}`;
      await expect(openDatabase(typo.toString())).rejects.toThrow(
        new DatabaseLocationError(
          `DATABASE_URL ${withoutCredentials(typo.toString())}: the database "${name}" does not exist: create it (e.g. createdb "${name}") or correct the name`,
        ),
      );
      const orm = await openDatabase(admin.toString());
      try {
        expect(
          await getKnex(orm)
            .raw('select 1 from pg_database where datname = ?', [name])
            .then((r: { rows: unknown[] }) => r.rows),
        ).toEqual([]);
      } finally {
        await closeDatabase(orm);
      }
      const closed = new URL(admin);
      closed.port = '9';
      await expect(openDatabase(closed.toString())).rejects.toThrow(/cannot reach PostgreSQL \(ECONNREFUSED\): is it running/);
    },
  );

  it('refuses in one line a PostgreSQL address where something else listens: one that hangs up, one that never answers (within 10 s, not a minute)', async () => {
    const { createServer } = await import('node:net');
    const held: import('node:net').Socket[] = [];
    const hangsUp = createServer((socket) => socket.destroy());
    const silent = createServer((socket) => void held.push(socket));
    const portOf = (server: import('node:net').Server) =>
      new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)));
    try {
      await expect(openDatabase(`postgres://u@127.0.0.1:${await portOf(hangsUp)}/db`)).rejects.toThrow(
        /: the server there closed the connection without answering as PostgreSQL: is it PostgreSQL's host and port\?$/,
      );
      await expect(openDatabase(`postgres://u@127.0.0.1:${await portOf(silent)}/db`)).rejects.toThrow(
        /: nothing answered as PostgreSQL within 10 s: is it PostgreSQL's host and port/,
      );
    } finally {
      for (const socket of held) socket.destroy();
      hangsUp.close();
      silent.close();
    }
  }, 60_000);

  it('reports the migrations it is about to apply and when they are done, and nothing when there are none', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'tollgate-migrations-'));
    const seen: unknown[][] = [];
    const migrations = {
      starting: (p: string[], n: number) => seen.push(['starting', p, n]),
      done: (p: string[]) => seen.push(['done', p]),
    };
    try {
      await closeDatabase(await openDatabase(`sqlite:${path.join(dir, 't.db')}`, { migrations }));
      const names = MIGRATIONS.map((m) => m.name);
      expect(seen).toEqual([
        ['starting', names, 0],
        ['done', names],
      ]);
      await closeDatabase(await openDatabase(`sqlite:${path.join(dir, 't.db')}`, { migrations }));
      expect(seen).toHaveLength(2);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('opens an in-memory SQLite database with the schema migrated', async () => {
    const orm = await openDatabase('sqlite::memory:');
    try {
      const service = new AccountsService(orm);
      const { apiKey, keyId } = await service.createAccount({ email: 'mem@example.com', tier: 'free' });
      expect((await service.authenticate(`Bearer ${apiKey}`)).keyId).toBe(keyId);
    } finally {
      await closeDatabase(orm);
    }
  });
});
