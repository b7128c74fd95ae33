// Every entity schema, registered explicitly with MikroORM (no folder discovery, no decorators).
// New entities (wallet, ledger, ...) are added to this one list.
import type { EntitySchema } from '@mikro-orm/core';
import { AccountSchema } from './Account.js';
import { ApiKeySchema } from './ApiKey.js';
import { AutoTopupSchema } from './AutoTopup.js';
import { PaymentCustomerSchema } from './PaymentCustomer.js';
import { TopUpSchema } from './TopUp.js';

export { Account, AccountSchema } from './Account.js';
export { ApiKey, ApiKeySchema } from './ApiKey.js';
export { AutoTopup, AutoTopupSchema } from './AutoTopup.js';
export { PaymentCustomer, PaymentCustomerSchema } from './PaymentCustomer.js';
export { TopUp, TopUpSchema } from './TopUp.js';

// biome-ignore lint/suspicious/noExplicitAny: schemas of different entity types in one list, as MikroORM's own typing does.
export const ENTITIES: EntitySchema<any, any>[] = [AccountSchema, ApiKeySchema, TopUpSchema, PaymentCustomerSchema, AutoTopupSchema];
