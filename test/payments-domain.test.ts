// Payments as services, with a clock the tests move, on SQLite and PostgreSQL: a sandbox checkout
// expiring unpaid, a Pay racing a Cancel, the walletUpdated events of a top-up (published after the
// commit, topup then bonus), and the entities' columns agreeing with the migration.
import type { MikroORM } from '@mikro-orm/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TIER_DEFAULTS } from '../src/config.js';
import { paymentsSchema } from '../src/config-payments.js';
import { closeDatabase, getKnex, openDatabase } from '../src/db/orm.js';
import { AccountsService } from '../src/domain/accounts/accounts-service.js';
import { BillingService } from '../src/domain/billing/billing-service.js';
import type { WalletChange } from '../src/domain/billing/wallet-events.js';
import { DomainError } from '../src/domain/errors.js';
import { createPayments, type Payments } from '../src/domain/payments/create-payments.js';
import { createLogger } from '../src/logger.js';
import { BACKENDS, createTestDatabase, type TestDatabase } from './support/databases.js';

describe.each(BACKENDS)('payments services on %s', (backend) => {
  let db: TestDatabase;
  let orm: MikroORM;
  let billing: BillingService;
  let accounts: AccountsService;
  let p: Payments;
  let clock = new Date('2026-11-26T10:00:00Z');

  beforeAll(async () => {
    db = await createTestDatabase(backend);
    orm = await openDatabase(db.url);
    const logger = createLogger('silent');
    billing = new BillingService({
      orm,
      tiers: TIER_DEFAULTS,
      settings: { hold_expiry_seconds: 900, sweep_interval_seconds: 3600, instance_timeout_seconds: 90 },
      logger,
      now: () => clock,
    });
    accounts = new AccountsService(orm);
    const settings = paymentsSchema.parse({ checkout_expires_after_minutes: 60 });
    p = createPayments({ billing, settings, stripe: null, publicUrl: () => 'http://tollgate.test', logger, now: () => clock });
  });
  afterAll(async () => {
    await p?.autoTopups.idle();
    await closeDatabase(orm);
    await db?.drop();
  });

  // One account per e-mail address: each gets its own.
  let made = 0;
  const newAccount = async () => (await accounts.createAccount({ email: `pay${++made}@example.com`, tier: 'developer' })).account;

  it('expires a sandbox checkout left unpaid past its hour: Pay is then refused and nothing is credited', async () => {
    const a = await newAccount();
    const t = await p.payments.startCheckout({ accountId: a.id, email: a.email, amount: 100 });
    expect(t.checkoutUrl).toBe(`http://tollgate.test/checkout/sandbox/${t.id}`);
    expect(t.expiresAt?.toISOString()).toBe('2026-11-26T11:00:00.000Z');
    clock = new Date('2026-11-26T11:00:01Z');
    // Past its expiry it reads expired wherever it is shown, before anyone opens its page.
    expect((await p.payments.checkoutStatus(t.id)).topUp.status).toBe('expired');
    const error = await p.payments.completeSandboxCheckout(t.id).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DomainError);
    expect((error as DomainError).code).toBe('checkout_not_open');
    expect((await p.payments.getTopUp(t.id)).status).toBe('expired');
    expect((await billing.getWallet(a.id)).balance).toBe(0n);
    expect(await billing.verifyLedger()).toEqual([]);
  });

  it("shows an open checkout past its expiry as expired in the account's list and its own lookup, and lists it under expired", async () => {
    const a = await newAccount();
    clock = new Date('2026-11-27T10:00:00Z');
    const old = await p.payments.startCheckout({ accountId: a.id, email: a.email, amount: 20 });
    clock = new Date('2026-11-27T10:30:00Z');
    const fresh = await p.payments.startCheckout({ accountId: a.id, email: a.email, amount: 30 });
    clock = new Date('2026-11-27T11:00:01Z');
    expect((await p.payments.listTopUps(a.id, { status: 'open' })).map((t) => t.id)).toEqual([fresh.id]);
    expect((await p.payments.listTopUps(a.id)).map((t) => [t.id, t.status])).toEqual([
      [fresh.id, 'open'],
      [old.id, 'expired'],
    ]);
    expect((await p.payments.findTopUpOf(a.id, old.id))?.status).toBe('expired');
    clock = new Date('2026-11-27T11:30:01Z');
    expect((await p.payments.findTopUpOf(a.id, fresh.id))?.status).toBe('expired');
    expect((await billing.getWallet(a.id)).balance).toBe(0n);
  });

  it('lets exactly one of a racing Pay and Cancel win', async () => {
    const a = await newAccount();
    const outcomes: string[] = [];
    for (let i = 0; i < 10; i++) {
      const t = await p.payments.startCheckout({ accountId: a.id, email: a.email, amount: 10 });
      const [pay, cancel] = await Promise.allSettled([p.payments.completeSandboxCheckout(t.id), p.payments.cancelSandboxCheckout(t.id)]);
      const final = (await p.payments.getTopUp(t.id)).status;
      // The loser is told the checkout is no longer open; the state is the winner's.
      if (final === 'paid') expect([pay.status, cancel.status]).toEqual(['fulfilled', 'rejected']);
      else expect([final, pay.status, cancel.status]).toEqual(['canceled', 'rejected', 'fulfilled']);
      outcomes.push(final);
    }
    const paid = outcomes.filter((o) => o === 'paid').length;
    expect((await billing.getWallet(a.id)).balance).toBe(BigInt(paid) * 10_000_000_000n);
    expect(await billing.verifyLedger()).toEqual([]);
  });

  it('publishes the top-up and its bonus to walletUpdated after the commit, in ledger order', async () => {
    const a = await newAccount();
    const seen: WalletChange[] = [];
    const stream = billing.events.subscribe(a.id);
    const t = await p.payments.startCheckout({ accountId: a.id, email: a.email, amount: 250 });
    await p.payments.completeSandboxCheckout(t.id);
    for (let i = 0; i < 2; i++) seen.push((await stream.next()).value as WalletChange);
    await stream.return?.();
    expect(seen.map((c) => [c.transaction.type, c.transaction.amount, c.balance])).toEqual([
      ['topup', 250_000_000_000n, 250_000_000_000n],
      ['bonus', 37_500_000_000n, 287_500_000_000n],
    ]);
  });

  it("has entities whose columns are the migrated tables' columns", async () => {
    const knex = getKnex(orm);
    for (const [entity, table] of [
      ['TopUp', 'top_ups'],
      ['PaymentCustomer', 'payment_customers'],
      ['AutoTopup', 'auto_topups'],
    ] as const) {
      const meta = orm.getMetadata().get(entity);
      expect(meta.tableName).toBe(table);
      const mapped = meta.props.flatMap((prop) => prop.fieldNames ?? []).sort();
      const actual = Object.keys(await knex(table).columnInfo()).sort();
      expect(mapped, table).toEqual(actual);
    }
  });
});
