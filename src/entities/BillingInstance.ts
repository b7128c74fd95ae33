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
  },
});
