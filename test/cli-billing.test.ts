// The operator's billing commands as an operator runs them (`node bin/tollgate.js …` in its own
// process): crediting a wallet, reading its balance, verifying the ledger (and failing loudly on
// a tampered one), and taking a tier whose monthly fee the config sets.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { closeDatabase, getKnex, openDatabase } from '../src/db/orm.js';
import { BillingService } from '../src/domain/billing/billing-service.js';
import { createLogger } from '../src/logger.js';

const BIN = fileURLToPath(new URL('../bin/tollgate.js', import.meta.url));

interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

function tollgate(env: Record<string, string>, ...args: string[]): Promise<RunResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { env: { ...process.env, TOLLGATE_DEBUG: '', ...env }, timeout: 30_000 },
      (error, stdout, stderr) => {
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr });
      },
    );
  });
}

describe('tollgate wallet and ledger commands', () => {
  let dir: string;
  let env: Record<string, string>;
  let accountId: string;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'tollgate-cli-billing-'));
    const config = path.join(dir, 'config.yaml');
    writeFileSync(config, 'tiers:\n  startup: { monthly_fee: 20 }\nmodels: []\n');
    env = { DATABASE_URL: `sqlite:${path.join(dir, 'tollgate.db')}`, CONFIG: config };
    const created = await tollgate(env, 'accounts', 'create', '--email', 'ops@example.com', '--tier', 'developer', '--json');
    expect(created.code).toBe(0);
    accountId = JSON.parse(created.stdout).account.id;
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('credits a wallet and prints the transaction with exact amounts', async () => {
    const r = await tollgate(
      env,
      'wallet',
      'credit',
      '--account',
      accountId,
      '--amount',
      '12.5',
      '--type',
      'bonus',
      '--description',
      'Welcome credits',
      '--json',
    );
    expect(r).toMatchObject({ code: 0, stderr: '' });
    expect(r.stdout).toMatch(/"amount":12.5,"balance_after":12.5,/);
    const t = JSON.parse(r.stdout);
    expect(t).toMatchObject({
      account_id: accountId,
      type: 'bonus',
      amount: 12.5,
      balance_after: 12.5,
      description: 'Welcome credits',
      reference: null,
    });
    expect(t.id).toMatch(/^txn_/);

    const refund = await tollgate(
      env,
      'wallet',
      'credit',
      '--account',
      accountId,
      '--amount',
      '0.000000001',
      '--type',
      'refund',
      '--description',
      'Rounding',
      '--json',
    );
    expect(refund.stdout).toContain('"amount":0.000000001,"balance_after":12.500000001,');

    // With an idempotency key, running the command twice credits once.
    const once = await tollgate(
      env,
      'wallet',
      'credit',
      '--account',
      accountId,
      '--amount',
      '1',
      '--type',
      'refund',
      '--description',
      'Ticket 7',
      '--idempotency-key',
      'ticket-7',
      '--json',
    );
    const twice = await tollgate(
      env,
      'wallet',
      'credit',
      '--account',
      accountId,
      '--amount',
      '1',
      '--type',
      'refund',
      '--description',
      'Ticket 7',
      '--idempotency-key',
      'ticket-7',
      '--json',
    );
    expect(JSON.parse(twice.stdout).id).toBe(JSON.parse(once.stdout).id);
    expect([JSON.parse(once.stdout).replayed, JSON.parse(twice.stdout).replayed]).toEqual([false, true]);
    // In words too: a third run says that nothing was credited, not "Credited".
    const thrice = await tollgate(
      env,
      'wallet',
      'credit',
      '--account',
      accountId,
      '--amount',
      '1',
      '--type',
      'refund',
      '--description',
      'Ticket 7',
      '--idempotency-key',
      'ticket-7',
    );
    expect(thrice.stdout).toMatch(
      new RegExp(
        `^Nothing credited: the idempotency key ticket-7 was used at .* for transaction ${JSON.parse(once.stdout).id} \\(1 USD, refund, to ${accountId}\\)\\.\n$`,
      ),
    );
    const balance = await tollgate(env, 'wallet', 'balance', '--account', accountId, '--json');
    expect(balance.stdout.trim()).toBe(`{"account_id":"${accountId}","balance":13.500000001,"held":0,"currency":"USD"}`);
  });

  it('refuses bad amounts, types and accounts with one line on stderr and exit code 1', async () => {
    for (const [args, message] of [
      [['--amount', '0.0000000001', '--type', 'bonus'], /9 decimal places/],
      [['--amount', 'ten', '--type', 'bonus'], /decimal amount/],
      [['--amount', '-5', '--type', 'bonus'], /amount must be more than 0/],
      [['--amount', '5', '--type', 'usage'], /Allowed choices are bonus, refund/],
    ] as const) {
      const r = await tollgate(env, 'wallet', 'credit', '--account', accountId, ...args, '--description', 'x');
      expect(r.code, args.join(' ')).toBe(1);
      expect(r.stderr, args.join(' ')).toMatch(message);
      expect(r.stderr).not.toContain('    at ');
    }
    const unknown = await tollgate(
      env,
      'wallet',
      'credit',
      '--account',
      'acct_nope',
      '--amount',
      '1',
      '--type',
      'bonus',
      '--description',
      'x',
    );
    expect(unknown).toMatchObject({ code: 1, stderr: "error: No account with id 'acct_nope'.\n" });
  });

  it('takes a tier through billing: its monthly fee is charged, or the change refused when the wallet cannot pay', async () => {
    const poor = JSON.parse((await tollgate(env, 'accounts', 'create', '--email', 'poor@example.com', '--tier', 'free', '--json')).stdout)
      .account.id;
    const refused = await tollgate(env, 'accounts', 'set-tier', '--account', poor, '--tier', 'startup');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('The startup tier costs 20 USD a month');
    await tollgate(env, 'wallet', 'credit', '--account', accountId, '--amount', '10', '--type', 'bonus', '--description', 'More');
    const taken = await tollgate(env, 'accounts', 'set-tier', '--account', accountId, '--tier', 'startup', '--json');
    expect(taken.code).toBe(0);
    expect(JSON.parse(taken.stdout).account.tier).toBe('startup');
    // 13.500000001 + 10 − 20
    expect((await tollgate(env, 'wallet', 'balance', '--account', accountId, '--json')).stdout).toContain('"balance":3.500000001,');
    // Taking it again this period costs nothing more.
    expect((await tollgate(env, 'accounts', 'set-tier', '--account', accountId, '--tier', 'startup')).code).toBe(0);
    expect((await tollgate(env, 'wallet', 'balance', '--account', accountId, '--json')).stdout).toContain('"balance":3.500000001,');
  });

  it('says so when a credit also charged a monthly fee that had fallen due, with the balance after both', async () => {
    const created = await tollgate(env, 'accounts', 'create', '--email', 'due@example.com', '--tier', 'startup', '--json');
    expect(created.code).toBe(0);
    const due = JSON.parse(created.stdout).account.id;
    const credit = ['wallet', 'credit', '--account', due, '--type', 'bonus', '--description', 'Welcome'];
    const r = await tollgate(env, ...credit, '--amount', '30');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /^Credited 30 USD \(bonus\) to acct_\w+, and charged with it 20 USD \(startup tier, \d{4}-\d{2}\), which had fallen due: balance 10 USD\./,
    );
    expect((await tollgate(env, 'wallet', 'balance', '--account', due, '--json')).stdout).toContain('"balance":10,');
    // The next credit charges nothing more this month, and says only its own balance.
    const json = JSON.parse((await tollgate(env, ...credit, '--amount', '1', '--json')).stdout);
    expect(json).toMatchObject({ amount: 1, balance_after: 11, charged_with_it: [] });
  });

  it('refuses a tier change when the server running on the database read other tiers, naming its config; warns on limits show', async () => {
    // The server reads another config, where the startup tier costs 35; the CLI reads its own (20).
    const serverConfig = path.join(dir, 'server.yaml');
    writeFileSync(serverConfig, 'tiers:\n  startup: { monthly_fee: 35 }\nmodels: []\n');
    const loaded = loadConfig({ CONFIG: serverConfig }, { payments: false });
    const orm = await openDatabase(env.DATABASE_URL!);
    const server = new BillingService({
      orm,
      tiers: loaded.tiers,
      configPath: loaded.configPath,
      settings: loaded.billing,
      logger: createLogger('silent'),
    });
    await server.start();
    try {
      const who = JSON.parse((await tollgate(env, 'accounts', 'create', '--email', 'tiers@example.com', '--tier', 'free', '--json')).stdout)
        .account.id;
      // A credit charges a fee that fell due: refused too, with nothing credited, while the tiers differ.
      const credit = ['wallet', 'credit', '--account', who, '--amount', '50', '--type', 'bonus', '--description', 'x'];
      const notCredited = await tollgate(env, ...credit);
      expect(notCredited.code).toBe(1);
      expect(notCredited.stderr).toContain(`run the command with CONFIG=${serverConfig}`);
      expect((await tollgate(env, 'wallet', 'balance', '--account', who, '--json')).stdout).toContain('"balance":0,');
      expect((await tollgate({ ...env, CONFIG: serverConfig }, ...credit)).code).toBe(0);
      const refused = await tollgate(env, 'accounts', 'set-tier', '--account', who, '--tier', 'startup');
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(`pid ${process.pid}`);
      expect(refused.stderr).toContain(`run the command with CONFIG=${serverConfig}`);
      expect(refused.stderr).toContain(`than ${env.CONFIG}`);
      expect(refused.stderr.trim().split('\n')).toHaveLength(1);
      // Nothing charged, tier unchanged.
      expect((await tollgate(env, 'wallet', 'balance', '--account', who, '--json')).stdout).toContain('"balance":50,');
      expect(JSON.parse((await tollgate(env, 'accounts', 'show', who, '--json')).stdout).account.tier).toBe('free');

      const shown = await tollgate(env, 'limits', 'show', '--account', who);
      expect(shown.code).toBe(0);
      expect(shown.stderr).toMatch(/^warning: the server running on this database .* shown with the tiers this command read\.\n$/);

      // With the server's config, the change goes through at the server's fee.
      const taken = await tollgate({ ...env, CONFIG: serverConfig }, 'accounts', 'set-tier', '--account', who, '--tier', 'startup');
      expect(taken).toMatchObject({ code: 0, stderr: '' });
      expect((await tollgate(env, 'wallet', 'balance', '--account', who, '--json')).stdout).toContain('"balance":15,');
    } finally {
      await server.stop();
      await closeDatabase(orm);
    }
    // A server that stopped is not asked.
    expect((await tollgate(env, 'limits', 'show', '--account', accountId)).stderr).toBe('');
  }, 120_000);

  it('verifies the ledger, and exits 1 listing each broken invariant', async () => {
    const ok = await tollgate(env, 'ledger', 'verify');
    expect(ok).toMatchObject({ code: 0, stdout: 'Ledger verified: every invariant holds.\n', stderr: '' });
    expect(JSON.parse((await tollgate(env, 'ledger', 'verify', '--json')).stdout)).toEqual({ ok: true, problems: [] });

    // Tamper with the database behind the ledger's back.
    const orm = await openDatabase(env.DATABASE_URL!);
    try {
      await getKnex(orm).raw('update wallets set balance = balance + 1 where account_id = ?', [accountId]);
    } finally {
      await closeDatabase(orm);
    }
    const broken = await tollgate(env, 'ledger', 'verify');
    expect(broken.code).toBe(1);
    expect(broken.stdout).toContain(`- account ${accountId}: balance`);
    expect(broken.stdout).toContain('differs from the sum of its transactions');
    expect(broken.stderr).toBe('error: ledger verify found 1 problem\n');
    const json = await tollgate(env, 'ledger', 'verify', '--json');
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout).problems).toHaveLength(1);
  });
});

describe('the CLI on a server configured for Stripe', () => {
  it('runs its commands without the Stripe secrets in its environment (it takes no payments)', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'tollgate-cli-stripe-'));
    try {
      const config = path.join(dir, 'config.yaml');
      writeFileSync(config, 'payments: { processor: stripe }\ntiers:\n  startup: { monthly_fee: 5 }\nmodels: []\n');
      const env = { DATABASE_URL: `sqlite:${path.join(dir, 'tollgate.db')}`, CONFIG: config };
      const created = await tollgate(env, 'accounts', 'create', '--email', 'stripe-ops@example.com', '--tier', 'startup', '--json');
      // The first command on a new file says only that it creates it.
      expect(created.stderr).toBe(`tollgate: no database at ${path.join(dir, 'tollgate.db')} (DATABASE_URL): creating a new one\n`);
      expect(created.code).toBe(0);
      const id = JSON.parse(created.stdout).account.id;
      const credit = await tollgate(
        env,
        'wallet',
        'credit',
        '--account',
        id,
        '--amount',
        '12',
        '--type',
        'bonus',
        '--description',
        'x',
        '--json',
      );
      expect(credit.code).toBe(0);
      // The credit paid the tier's fee it found due.
      const shown = await tollgate(env, 'accounts', 'show', id, '--json');
      expect(JSON.parse(shown.stdout).account).toMatchObject({ tier: 'startup' });
      const limits = await tollgate(env, 'limits', 'show', '--account', id, '--json');
      expect(limits.code).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
