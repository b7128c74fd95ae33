// What stops start-up before the server serves, in one line an operator can act on: here, a
// MAIL_DIR that e-mails (receipts, alerts, password resets) cannot be written to.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';
import { closeServices, createServices } from '../src/container.js';

const dir = mkdtempSync(path.join(tmpdir(), 'tollgate-startup-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

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
