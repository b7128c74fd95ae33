// The two seams between payments and the wallet: crediting inside the caller's database
// transaction (so a top-up's state change, its `topup` row and its `bonus` row commit together or
// not at all), and the notifications outbox. The composition root plugs billing in.
import type { Db, Queryable } from '../billing/sql.js';
import type { WalletChange } from '../billing/wallet-events.js';

export interface WalletCredit {
  accountId: string;
  type: 'topup' | 'bonus';
  /** Nanos, positive. */
  amount: bigint;
  description: string;
  /** The processor's payment id. */
  reference: string;
  /** Unique across the ledger: `topup:<processor>:<payment id>`, `bonus:<processor>:<payment id>`. */
  idempotencyKey: string;
}

export interface WalletTakeBack {
  accountId: string;
  /** Nanos, positive: the most to take. */
  amount: bigint;
  /** The ledger row's text, given what was taken. */
  describe: (taken: bigint) => string;
  /** The processor's payment id. */
  reference: string;
  /** Unique across the ledger, e.g. `topup-refund:<processor>:<payment id>:<refunded cents>`. */
  idempotencyKey: string;
}

export interface WalletPort {
  /**
   * Credits the wallet inside `trx` (taking the wallet row's lock) and appends the ledger row.
   * Changes to publish once the transaction has committed are pushed onto `effects`.
   */
  creditWithin(trx: Queryable, credit: WalletCredit, now: Date, effects: WalletChange[]): Promise<void>;
  /**
   * Takes credits back inside `trx` (a refunded or disputed top-up): at most what the wallet has
   * available, never below zero; appends a negative `topup` row; returns what was taken. A key
   * already in the ledger takes nothing again.
   */
  takeBackWithin(trx: Queryable, take: WalletTakeBack, now: Date, effects: WalletChange[]): Promise<bigint>;
  /** The balance the customer sees (GET /v1/wallet/balance), read inside `db`. */
  balanceOf(db: Db, accountId: string): Promise<bigint>;
  /** Publishes changes after their transaction committed (Subscription.walletUpdated). */
  publish(effects: WalletChange[]): void;
}

export type PaymentNotificationKind = 'auto_topup_failed' | 'auto_topup_disabled' | 'auto_topup_capped' | 'receipt' | 'topup_reversed';

export interface NotifierPort {
  /** Queues a notification inside `db`'s transaction, once per `dedupeKey`. */
  enqueue(
    db: Db,
    n: { accountId: string; kind: PaymentNotificationKind; dedupeKey: string; payload: Record<string, unknown>; now: Date },
  ): Promise<void>;
}
