// A running server, by its heartbeat: the holds of a server whose heartbeat has stopped are
// released by the others (src/domain/billing/).
import { EntitySchema } from '@mikro-orm/core';
import { timestamp } from './columns.js';

export class BillingInstance {
  id!: string;
  host!: string;
  pid!: number;
  startedAt!: Date;
  heartbeatAt!: Date;
  /** The config file the server read (absolute path); null for servers before migration 0016. */
  configPath!: string | null;
  /** sha256 of the server's tiers (tiersDigest); null for servers before migration 0016. */
  tiersDigest!: string | null;
}

export const BillingInstanceSchema = new EntitySchema<BillingInstance>({
  class: BillingInstance,
  tableName: 'billing_instances',
  properties: {
    id: { type: 'string', primary: true, length: 40 },
    host: { type: 'string', length: 255 },
    pid: { type: 'integer' },
    startedAt: timestamp,
    heartbeatAt: timestamp,
    configPath: { type: 'string', length: 1000, nullable: true },
    tiersDigest: { type: 'string', length: 64, nullable: true },
  },
});
