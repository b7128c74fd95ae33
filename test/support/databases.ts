// The databases tests run on: SQLite (a temp file) always, PostgreSQL too when TEST_DATABASE_URL is
// set. Each call creates a fresh database (on PostgreSQL through the given URL) and drop() removes it.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { MikroORM } from '@mikro-orm/core';
import { missing } from './requirements.js';

export type BackendName = 'SQLite' | 'PostgreSQL';

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

const adminUrl = process.env.TEST_DATABASE_URL;

/** The backends to run on: ['SQLite'], plus 'PostgreSQL' when TEST_DATABASE_URL is set. */
export const BACKENDS: BackendName[] = adminUrl ? ['SQLite', 'PostgreSQL'] : ['SQLite'];
export const HAS_POSTGRES = Boolean(adminUrl);
// Under CI=true, a file that would quietly run on SQLite only gets a failing test instead.
missing('PostgreSQL (set TEST_DATABASE_URL)', HAS_POSTGRES);

export async function createTestDatabase(backend: BackendName): Promise<TestDatabase> {
  if (backend === 'SQLite') {
    const dir = mkdtempSync(path.join(tmpdir(), 'tollgate-db-'));
    return { url: `sqlite:${path.join(dir, 'tollgate.db')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  if (!adminUrl) throw new Error('TEST_DATABASE_URL is not set');
  const name = `tollgate_test_${randomBytes(6).toString('hex')}`;
  const { PostgreSqlDriver } = await import('@mikro-orm/postgresql');
  const admin = await MikroORM.init({
    driver: PostgreSqlDriver,
    clientUrl: adminUrl,
    entities: [],
    discovery: { warnWhenNoEntities: false },
    ensureDatabase: false,
  });
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
}
