// The composition root: builds every domain service once, in dependency order.
import type { MikroORM } from '@mikro-orm/core';
import { type AppConfig, ConfigError } from './config.js';
import { accessSync, constants, mkdirSync } from 'node:fs';
import { openDatabase, closeDatabase } from './db/orm.js';
import { AccountsService } from './domain/accounts/accounts-service.js';
import { KeyWatch } from './domain/accounts/key-watch.js';
import { SubscriptionSlots } from './domain/accounts/subscription-slots.js';
import { BillingService } from './domain/billing/billing-service.js';
import { Catalog } from './domain/catalog/catalog.js';
import { ContentFilter } from './domain/inference/content-filter.js';
import { Engines } from './domain/inference/engines.js';
import { InferenceService, type Metering } from './domain/inference/inference-service.js';
import type { AutoTopupService } from './domain/payments/auto-topup-service.js';
import { createPayments } from './domain/payments/create-payments.js';
import { createAlerts, type Alerts } from './domain/notifications/create-alerts.js';
import type { PaymentsService } from './domain/payments/payments-service.js';
import { createRateLimiter } from './domain/ratelimit/create-rate-limiter.js';
import { OutboxNotificationSink } from './domain/ratelimit/outbox-sink.js';
import { RateLimitOverrides } from './domain/ratelimit/overrides.js';
import { RateLimitMetering, tierLimits } from './domain/ratelimit/rate-limit-metering.js';
import type { RateLimiter } from './domain/ratelimit/rate-limiter.js';
import type { Logger } from './logger.js';
import { getKnex } from './db/orm.js';
import { Metrics, MetricsMetering, TimedEngines } from './metrics.js';
import { AuthService } from './domain/auth/auth-service.js';
import { createMailer } from './mail/mailer.js';
import { bridgeWalletEvents, type WalletBus } from './events/redis-wallet-events.js';
import { makeFolder } from './make-folder.js';

export interface Services {
  config: AppConfig;
  logger: Logger;
  orm: MikroORM;
  catalog: Catalog;
  engines: Engines;
  inference: InferenceService;
  accounts: AccountsService;
  /** Ends open subscriptions and streams of keys revoked or expired since they opened. */
  keyWatch: KeyWatch;
  /** Bounds the standing subscriptions (wallet, notifications) each account holds open here. */
  subscriptionSlots: SubscriptionSlots;
  billing: BillingService;
  /** Null when `rate_limits.backend` is `none`. */
  rateLimiter: RateLimiter | null;
  /** The operator's per-account RPM and TPM. */
  rateLimitOverrides: RateLimitOverrides;
  payments: PaymentsService;
  autoTopups: AutoTopupService;
  metrics: Metrics;
  /** With REDIS_URL: wallet events shared with the other instances (null without). */
  walletBus: WalletBus | null;
  /** E-mail delivery of the notifications outbox, unusual-usage detection, alert settings and the feed. */
  alerts: Alerts;
  /** People in the dashboard: sign-up, sign-in, sessions, password reset (issue 15). */
  auth: AuthService;
}

export interface ServiceOptions {
  /** The clock billing reads (periods, fees, holds); tests fix it to a known date. */
  now?: () => Date;
}

export async function createServices(config: AppConfig, logger: Logger, opts: ServiceOptions = {}): Promise<Services> {
  const catalog = new Catalog(config.models);
  // First: it reads the in-process models' files, and a catalog that contradicts one stops start-up.
  const engines = new Engines(config.models, logger.child({ component: 'engine' }), process.env, { gpu: config.llamacpp.gpu });
  // An explicit GPU build that cannot run here stops start-up, before the database opens.
  await engines.checkRuntime();
  const dbLog = logger.child({ component: 'database' });
  const orm = await openDatabase(config.databaseUrl, {
    migrations: {
      starting: (pending, applied) =>
        dbLog.info(
          { migrations: pending },
          applied === 0
            ? `creating the database's tables (${pending.length} migrations)`
            : `upgrading the database: ${pending.length} migration${pending.length === 1 ? '' : 's'} to apply; on a large database this can take a while`,
        ),
      done: (pending, ms) => dbLog.info({ migrations: pending.length, ms }, 'the database is up to date'),
    },
  });
  // Without SMTP_URL, e-mails are files: a folder they cannot be written to stops start-up (after
  // the database, the graver problem, was opened), rather than every receipt, alert and password
  // reset failing later.
  if (!config.mail.smtpUrl) {
    try {
      checkMailDir(config.mail.dir);
    } catch (e) {
      await closeDatabase(orm);
      throw e;
    }
  }
  const billing = new BillingService({
    orm,
    tiers: config.tiers,
    configPath: config.configPath,
    settings: config.billing,
    logger: logger.child({ component: 'billing' }),
    now: opts.now,
  });
  // Releases what servers that died left held, before this one takes any call.
  await billing.start();
  // Eager in-process models load in the background, one by one; /readyz waits for them.
  void engines.startLoading();
  const accounts = new AccountsService(orm);
  const rateLimitOverrides = new RateLimitOverrides(orm);
  const rateLimiter = await createRateLimiter(config.rateLimits, config.redisUrl, {
    logger: logger.child({ component: 'ratelimit' }),
    notifications: new OutboxNotificationSink(billing.db),
  });
  // In-memory limits are each process's own: a second server on this database would let through
  // up to twice a tier's limits. Said once, at start-up, by the server that finds the other.
  if (rateLimiter && config.rateLimits.backend === 'memory') {
    const others = await billing.otherServers();
    if (others.length > 0)
      logger.warn(
        { servers: others.map((o) => ({ host: o.host, pid: o.pid })) },
        `${others.length === 1 ? 'another tollgate server uses' : `${others.length} other tollgate servers use`} this database: rate limits are counted in each server's memory, so together they admit more than a tier's limits; set REDIS_URL on every server (README "Scaling out")`,
      );
  }
  // Rate limits admit first: a call they refuse places no hold and is never billed.
  const limited: Metering = rateLimiter
    ? new RateLimitMetering(
        billing,
        rateLimiter,
        tierLimits(config.tiers, (id) => rateLimitOverrides.profile(id)),
      )
    : billing;
  const knex = getKnex(orm);
  // SQLite answers rows, PostgreSQL a result with `rows`.
  const count = async (sql: string) => {
    const result: unknown = await knex.raw(sql);
    const rows = (Array.isArray(result) ? result : (result as { rows: unknown[] }).rows) as { n: unknown }[];
    return Number(rows[0]?.n ?? 0);
  };
  const metrics = new Metrics({
    holdsOpen: () => count('select count(*) as n from holds'),
    outboxPending: () => count("select count(*) as n from notifications where delivery = 'pending'"),
    outboxFailed: () => count("select count(*) as n from notifications where delivery = 'failed'"),
    queueDepths: () =>
      Object.fromEntries(config.models.flatMap((m) => (engines.local(m.id) ? [[m.id, engines.local(m.id)!.queueDepth]] : []))),
    rateLimiter,
  });
  // Metrics outermost: they count what each call was settled at, after limits and billing.
  const metering: Metering = new MetricsMetering(limited, metrics);
  const forwarding = new Set(config.models.filter((m) => m.engine.type === 'openai').map((m) => m.id));
  const timedEngines = new TimedEngines(engines, metrics, forwarding);
  // A chat model's content filter bills its moderation calls (and counts them in the metrics), but
  // not against the rate limits: the chat call they belong to was counted once already.
  const contentFilter = new ContentFilter(catalog, timedEngines, new MetricsMetering(billing, metrics));
  // Top-ups credit through billing's ledger; debits start automatic top-up checks.
  const { payments, autoTopups } = createPayments({
    billing,
    settings: config.payments,
    stripe: config.stripe,
    publicUrl: () => config.publicUrl,
    logger,
  });
  // Alerts: sends the outbox by e-mail (leases owned by billing's instance) and watches for unusual usage.
  const alerts = createAlerts({ billing, settings: config.alerts, mail: config.mail, publicUrl: () => config.publicUrl, logger });
  alerts.start();
  autoTopups.start();
  const auth = new AuthService({
    orm,
    accounts,
    settings: config.accounts,
    adminToken: () => config.adminToken,
    publicUrl: () => config.publicUrl,
    mailer: createMailer(config.mail, logger.child({ component: 'auth' })),
    logger: logger.child({ component: 'auth' }),
  });
  return {
    config,
    logger,
    orm,
    catalog,
    engines,
    inference: new InferenceService(catalog, timedEngines, metering, { maxChoices: config.chat.max_choices, contentFilter }),
    accounts,
    subscriptionSlots: new SubscriptionSlots(config.graphql.max_subscriptions_per_account),
    keyWatch: new KeyWatch(accounts, { sessions: auth, logger: logger.child({ component: 'keys' }) }),
    billing,
    rateLimiter,
    rateLimitOverrides,
    payments,
    autoTopups,
    metrics,
    alerts,
    auth,
    walletBus: config.redisUrl
      ? bridgeWalletEvents(billing.events, config.redisUrl, {
          prefix: config.rateLimits.key_prefix,
          logger: logger.child({ component: 'events' }),
        })
      : null,
  };
}

export async function closeServices(services: Services): Promise<void> {
  // Automatic top-up checks running in the background finish before billing and the database close.
  services.keyWatch.close();
  await services.walletBus?.close();
  services.autoTopups.stop();
  await services.autoTopups.idle();
  // Side by side: each lets the message it is sending finish for 2 s at most (a hung SMTP server
  // must not hold shutdown), so together they take no longer.
  await Promise.all([services.auth.stop(), services.alerts.stop()]);
  await services.billing.stop();
  await services.rateLimiter?.close();
  await services.engines.close();
  await closeDatabase(services.orm);
}

function checkMailDir(dir: string): void {
  try {
    makeFolder(dir);
    accessSync(dir, constants.W_OK);
  } catch (e) {
    throw new ConfigError(
      `MAIL_DIR ${dir}: e-mails (receipts, alerts, password resets) cannot be written there (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}): make it a writable folder, set MAIL_DIR to another, or set SMTP_URL`,
    );
  }
}
