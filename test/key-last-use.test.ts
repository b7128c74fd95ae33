// When each API key was last used (src/domain/keys/key-use.ts): written to its row after its calls,
// at most once a minute per key and server; shown by ApiKey.lastUsedAt; filled from the usage
// events already recorded by migration 0011.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getKnex } from '../src/db/orm.js';
import { KeyUse } from '../src/domain/keys/key-use.js';
import { BACKENDS, createTestDatabase, type TestDatabase } from './support/databases.js';
import { startTestServer, type TestServer } from './support/harness.js';
import { client, seed } from './support/seed.js';
import { until, waitUntil } from './support/wait.js';

/** A datetime as either driver reads it back (epoch ms on SQLite, a Date on PostgreSQL). */
const ms = (v: unknown) => (v instanceof Date ? v.getTime() : Number(v));

describe('KeyUse', () => {
  const at = (ms: number) => new Date(Date.UTC(2031, 4, 14) + ms);

  it('writes a key at its first call, then at most once a minute', async () => {
    const writes: [string, number][] = [];
    const use = new KeyUse(
      async (key, when) => void writes.push([key, when.getTime() - at(0).getTime()]),
      () => {},
    );
    use.touch('key_a', at(0));
    use.touch('key_a', at(30_000));
    use.touch('key_b', at(30_000));
    use.touch('key_a', at(59_999));
    use.touch('key_a', at(60_000));
    use.touch(null, at(60_000));
    expect(writes).toEqual([
      ['key_a', 0],
      ['key_b', 30_000],
      ['key_a', 60_000],
    ]);
  });

  it('tries a failed write again at the key’s next call, and reports the failure', async () => {
    let fail = true;
    const written: number[] = [];
    const errors: string[] = [];
    const use = new KeyUse(
      async (_key, when) => {
        if (fail) throw new Error('database is locked');
        written.push(when.getTime());
      },
      (err, key) => errors.push(`${key}: ${(err as Error).message}`),
    );
    use.touch('key_a', at(0));
    await waitUntil(() => errors.length === 1);
    fail = false;
    use.touch('key_a', at(1_000));
    await waitUntil(() => written.length === 1);
    expect(written).toEqual([at(1_000).getTime()]);
    expect(errors).toEqual(['key_a: database is locked']);
  });
});

describe.each(BACKENDS)('ApiKey.lastUsedAt on %s', (backend) => {
  let db: TestDatabase;
  let s: TestServer;
  beforeAll(async () => {
    db = await createTestDatabase(backend);
    s = await startTestServer({ databaseUrl: db.url });
  });
  afterAll(async () => {
    await s?.close();
    await db?.drop();
  });

  const keysOf = async (apiKey: string) =>
    (await s.graphql('{ viewer { apiKeys { id lastUsedAt } } }', {}, apiKey)).body.data.viewer.apiKeys as {
      id: string;
      lastUsedAt: string | null;
    }[];

  it('is null until the key makes a call, then the time of that call', async () => {
    const a = await seed(s).account({ tier: 'enterprise' });
    const [before] = await keysOf(a.apiKey);
    // Reading the viewer is not a call of the API.
    expect(before!.lastUsedAt).toBeNull();
    const started = Date.now();
    expect((await client(s, a.apiKey).chat('x #tokens=3', { max_tokens: 3 })).status).toBe(200);
    const used = await until(async () => (await keysOf(a.apiKey))[0]!.lastUsedAt);
    expect(new Date(used).getTime()).toBeGreaterThanOrEqual(started - 1);
    expect(new Date(used).getTime()).toBeLessThanOrEqual(Date.now());
  });

  it('is filled from the recorded usage events by its migration', async () => {
    const a = await seed(s).account({ tier: 'enterprise' });
    const c = client(s, a.apiKey);
    for (let i = 0; i < 3; i++) expect((await c.chat('x #tokens=2', { max_tokens: 2 })).status).toBe(200);
    const knex = getKnex(s.services.orm);
    const keyId = (await keysOf(a.apiKey))[0]!.id;
    await until(async () => (await knex('api_keys').where('id', keyId).first())?.last_used_at != null);
    const last = await knex('usage_events').where('key_id', keyId).max({ t: 'created_at' }).first();
    const migrator = s.services.orm.getMigrator();
    await migrator.down({ to: '0010-usage-events-one-account-index' });
    await migrator.up();
    const row = await knex('api_keys').where('id', keyId).first();
    expect(row.last_used_at).not.toBeNull();
    expect(ms(row.last_used_at)).toBe(ms(last!.t));
    // A key never used stays null.
    const unused = await seed(s).account({ tier: 'enterprise' });
    expect((await keysOf(unused.apiKey))[0]!.lastUsedAt).toBeNull();
  });
});
