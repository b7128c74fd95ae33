// The composition root: builds every domain service once, in dependency order.
import type { MikroORM } from '@mikro-orm/core';
import type { AppConfig } from './config.js';
import { openDatabase, closeDatabase } from './db/orm.js';
import { AccountsService } from './domain/accounts/accounts-service.js';
import { KeyWatch } from './domain/accounts/key-watch.js';
import { BillingService } from './domain/billing/billing-service.js';
import { Catalog } from './domain/catalog/catalog.js';
import { Engines } from './domain/inference/engines.js';
import { InferenceService, type Metering } from './domain/inference/inference-service.js';
import type { AutoTopupService } from './domain/payments/auto-topup-service.js';
import { createPayments } from './domain/payments/create-payments.js';
import type { PaymentsService } from './domain/payments/payments-service.js';
import { createRateLimiter } from './domain/ratelimit/create-rate-limiter.js';
import { OutboxNotificationSink } from './domain/ratelimit/outbox-sink.js';
import { RateLimitOverrides } from './domain/ratelimit/overrides.js';
import { RateLimitMetering, tierLimits } from './domain/ratelimit/rate-limit-metering.js';
import type { RateLimiter } from './domain/ratelimit/rate-limiter.js';
import type { Logger } from './logger.js';

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
  billing: BillingService;
  /** Null when `rate_limits.backend` is `none`. */
  rateLimiter: RateLimiter | null;
  /** The operator's per-account RPM and TPM. */
  rateLimitOverrides: RateLimitOverrides;
  payments: PaymentsService;
  autoTopups: AutoTopupService;
}

export interface ServiceOptions {
  /** The clock billing reads (periods, fees, holds); tests fix it to a known date. */
  now?: () => Date;
}

export async function createServices(config: AppConfig, logger: Logger, opts: ServiceOptions = {}): Promise<Services> {
  const catalog = new Catalog(config.models);
  // First: it reads the in-process models' files, and a catalog that contradicts one stops start-up.
  const engines = new Engines(config.models, logger.child({ component: 'engine' }));
  const orm = await openDatabase(config.databaseUrl);
  const billing = new BillingService({ orm, tiers: config.tiers, settings: config.billing, logger: logger.child({ component: 'billing' }), now: opts.now });
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
  // Rate limits admit first: a call they refuse places no hold and is never billed.
  const metering: Metering = rateLimiter ? new RateLimitMetering(billing, rateLimiter, tierLimits(config.tiers, (id) => rateLimitOverrides.profile(id))) : billing;
  // Top-ups credit through billing's ledger; debits start automatic top-up checks.
  const { payments, autoTopups } = createPayments({ billing, settings: config.payments, stripe: config.stripe, publicUrl: () => config.publicUrl, logger });
  return {
    config,
    logger,
    orm,
    catalog,
    engines,
    inference: new InferenceService(catalog, engines, metering),
    accounts,
    keyWatch: new KeyWatch(accounts, { logger: logger.child({ component: 'keys' }) }),
    billing,
    rateLimiter,
    rateLimitOverrides,
    payments,
    autoTopups,
  };
}

export async function closeServices(services: Services): Promise<void> {
  // Automatic top-up checks running in the background finish before billing and the database close.
  services.keyWatch.close();
  await services.autoTopups.idle();
  await services.billing.stop();
  await services.rateLimiter?.close();
  await services.engines.close();
  await closeDatabase(services.orm);
}
