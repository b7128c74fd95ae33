// The database away for a moment is no bug of tollgate's: a call whose database connection is
// refused or dropped answers 503 database_unavailable with a Retry-After (clients retry it), not
// 500 internal_error, and the server serves again as soon as the database answers. On PostgreSQL:
// the database refuses new connections (ALLOW_CONNECTIONS false) and the server's are ended.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeDatabase, getKnex, openDatabase } from '../src/db/orm.js';
import { isDatabaseUnavailable, logBackgroundFailure } from '../src/db/unavailable.js';
import { httpError } from '../src/graphql/errors.js';
import { createTestDatabase, HAS_POSTGRES, type TestDatabase } from './support/databases.js';
import { startTestServer, type TestServer } from './support/harness.js';

describe('database errors', () => {
  it('tells a connection gone or refused from a fault of the server', () => {
    const pgError = (code: string, message: string) => Object.assign(new Error(message), { code });
    for (const e of [
      new Error('Connection terminated unexpectedly'),
      pgError('57P01', 'terminating connection due to administrator command'),
      pgError('53300', 'too many connections for database "x"'),
      pgError('08006', 'connection failure'),
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
      new Error('wrapped', { cause: new Error('Connection terminated unexpectedly') }),
    ])
      expect(isDatabaseUnavailable(e), e.message).toBe(true);
    for (const e of [new TypeError("Cannot read properties of undefined (reading 'x')"), pgError('23505', 'duplicate key value')])
      expect(isDatabaseUnavailable(e), e.message).toBe(false);
    const logged: unknown[] = [];
    const mapped = httpError(new Error('Connection terminated unexpectedly'), (e) => logged.push(e));
    expect(mapped).toMatchObject({ status: 503, retryAfter: 1, body: { error: { code: 'database_unavailable', type: 'server_error' } } });
    // No bug: not logged as an unexpected error, with its stack, once per request.
    expect(logged).toHaveLength(0);
    const other = httpError(new TypeError('a bug'), (e) => logged.push(e));
    expect([other.status, logged]).toEqual([500, [expect.any(TypeError)]]);
    // A pool with no connection to give is answered 503 too, but logged: it is also what a bug
    // holding every connection (SQLite's one) looks like.
    logged.length = 0;
    const pool = new Error('Knex: Timeout acquiring a connection. The pool is probably full.');
    expect(httpError(pool, (e) => logged.push(e))).toMatchObject({ status: 503, body: { error: { code: 'database_unavailable' } } });
    expect(logged).toEqual([pool]);
  });

  it("says a background loop's failure while the database is away once every 30 s, as a warning without a stack; a bug each time", () => {
    const lines: { level: string; obj: Record<string, unknown>; msg: string }[] = [];
    const logger = {
      error: (obj: object, msg: string) => lines.push({ level: 'error', obj: obj as Record<string, unknown>, msg }),
      warn: (obj: object, msg: string) => lines.push({ level: 'warn', obj: obj as Record<string, unknown>, msg }),
    };
    const away = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    const t0 = 1_000_000;
    for (let second = 0; second < 65; second++) logBackgroundFailure(logger, away, 'test loop failed', { loop: 1 }, t0 + second * 1000);
    expect(lines.map((l) => [l.level, l.msg])).toEqual(
      Array(3).fill(['warn', 'test loop failed: the database is unavailable (said once every 30 s while it lasts)']),
    );
    expect(lines[0]!.obj).toEqual({ loop: 1, reason: 'connect ECONNREFUSED 127.0.0.1:5432' });
    lines.length = 0;
    const pool = new Error('Knex: Timeout acquiring a connection. The pool is probably full.');
    logBackgroundFailure(logger, pool, 'test loop failed', {}, t0 + 1);
    logBackgroundFailure(logger, pool, 'test loop failed', {}, t0 + 2);
    expect(lines.map((l) => l.level)).toEqual(['error', 'error']);
    lines.length = 0;
    const bug = new TypeError('a bug');
    logBackgroundFailure(logger, bug, 'test loop failed', {}, t0 + 1);
    logBackgroundFailure(logger, bug, 'test loop failed', {}, t0 + 2);
    expect(lines.map((l) => [l.level, l.obj.err])).toEqual([
      ['error', bug],
      ['error', bug],
    ]);
  });
});

describe.runIf(HAS_POSTGRES)('a PostgreSQL database that refuses connections for a moment', () => {
  let db: TestDatabase;
  let s: TestServer;
  let name: string;
  beforeAll(async () => {
    db = await createTestDatabase('PostgreSQL');
    name = new URL(db.url).pathname.slice(1);
    s = await startTestServer({ databaseUrl: db.url });
  });
  afterAll(async () => {
    await s?.close();
    await db?.drop();
  });

  it('answers 503 database_unavailable with Retry-After meanwhile, and serves again after', async () => {
    const { apiKey } = await s.account('developer');
    const models = () => fetch(`${s.v1}/models`, { headers: { authorization: `Bearer ${apiKey}` } });
    expect((await models()).status).toBe(200);
    const admin = await openDatabase(process.env.TEST_DATABASE_URL!);
    const knex = getKnex(admin);
    try {
      await knex.raw(`alter database "${name}" allow_connections false`);
      await knex.raw('select pg_terminate_backend(pid) from pg_stat_activity where datname = ? and pid <> pg_backend_pid()', [name]);
      const refused = await models();
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('1');
      expect((await refused.json()).error).toMatchObject({ code: 'database_unavailable', type: 'server_error' });
    } finally {
      await knex.raw(`alter database "${name}" allow_connections true`);
      await closeDatabase(admin);
    }
    expect((await models()).status).toBe(200);
  });
});
