// An account's wallet: its balance, the money held for calls in flight, and the current billing
// period's counters (allocation used and held, wallet money spent), with the account's spending
// limit and low-balance alert settings. One row per account, so admitting a call is one conditional
// update of it (src/domain/billing/). Money in nanos (BigInt); token counters as numbers.
import { BigIntType, EntitySchema } from '@mikro-orm/core';
import type { Account } from './Account.js';
import { accountRef, bigintColumn, timestamp, tokenColumn } from './columns.js';

export class Wallet {
  account!: Account;
  balance = 0n;
  held = 0n;
  /** The billing period (calendar month UTC, 'YYYY-MM') the counters belong to. */
  period!: string;
  periodUsed = 0;
  periodHeld = 0;
  periodSpent = 0n;
  feePeriod: string | null = null;
  feeTier: string | null = null;
  spendingLimitEnabled = false;
  spendingLimit: bigint | null = null;
  spendingLimitAction: 'block' | 'alert' = 'block';
  /** How many times the spending limit was set: its alert is written once per period and per setting. */
  spendingLimitVersion = 0;
  lowBalanceThreshold: bigint | null = null;
  lowBalanceAlerted = false;
  allocationAlertPeriod: string | null = null;
  spendingAlertPeriod: string | null = null;
  /** The period whose "monthly tokens used up" alert was raised. */
  allocationFullPeriod: string | null = null;
  createdAt!: Date;
  updatedAt!: Date;
}

export const WalletSchema = new EntitySchema<Wallet>({
  class: Wallet,
  tableName: 'wallets',
  properties: {
    account: { ...accountRef, kind: '1:1', owner: true, primary: true },
    balance: { ...bigintColumn, defaultRaw: "'0'" },
    held: { ...bigintColumn, defaultRaw: "'0'" },
    period: { type: 'string', length: 7 },
    periodUsed: { ...tokenColumn, defaultRaw: "'0'" },
    periodHeld: { ...tokenColumn, defaultRaw: "'0'" },
    periodSpent: { ...bigintColumn, defaultRaw: "'0'" },
    feePeriod: { type: 'string', length: 7, nullable: true },
    feeTier: { type: 'string', length: 32, nullable: true },
    spendingLimitEnabled: { type: 'boolean', default: false },
    spendingLimit: { type: new BigIntType('bigint'), nullable: true },
    spendingLimitAction: { type: 'string', length: 8, default: 'block' },
    spendingLimitVersion: { type: 'integer', default: 0 },
    lowBalanceThreshold: { type: new BigIntType('bigint'), nullable: true },
    lowBalanceAlerted: { type: 'boolean', default: false },
    allocationAlertPeriod: { type: 'string', length: 7, nullable: true },
    spendingAlertPeriod: { type: 'string', length: 7, nullable: true },
    allocationFullPeriod: { type: 'string', length: 7, nullable: true },
    createdAt: timestamp,
    updatedAt: timestamp,
  },
});
