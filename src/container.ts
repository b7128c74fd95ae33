// The composition root: builds every domain service once, in dependency order.
import type { MikroORM } from '@mikro-orm/core';
import type { AppConfig } from './config.js';
import { openDatabase, closeDatabase } from './db/orm.js';
import { AccountsService } from './domain/accounts/accounts-service.js';
import { Catalog } from './domain/catalog/catalog.js';
import { Engines } from './domain/inference/engines.js';
import { InferenceService } from './domain/inference/inference-service.js';
import type { Logger } from './logger.js';

export interface Services {
  config: AppConfig;
  logger: Logger;
  orm: MikroORM;
  catalog: Catalog;
  engines: Engines;
  inference: InferenceService;
  accounts: AccountsService;
}

export async function createServices(config: AppConfig, logger: Logger): Promise<Services> {
  const orm = await openDatabase(config.databaseUrl);
  const catalog = new Catalog(config.models);
  const engines = new Engines(config.models, logger.child({ component: 'engine' }));
  return {
    config,
    logger,
    orm,
    catalog,
    engines,
    inference: new InferenceService(catalog, engines),
    accounts: new AccountsService(orm),
  };
}

export async function closeServices(services: Services): Promise<void> {
  await services.engines.close();
  await closeDatabase(services.orm);
}
