// The state every part of billing shares (the database, the tiers and their fees, the settings,
// the clock, this server's identity, wallet events) and the two helpers they all use. The parts
// build on it in one line: alerts → wallet lifecycle → settlement → admission → sweeper →
// account operations → usage reports → BillingService (./billing-service.ts).
import { readFileSync, readlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import type { ModelConfig } from '../catalog/model.js';
import type { Tier as TierName, TierPolicy } from '../accounts/tiers.js';
import type { BillingSettings } from './settings.js';
import type { Logger } from '../../logger.js';
import { newId } from '../ids.js';
import { KEY_USE_UPDATE, KeyUse } from '../keys/key-use.js';
import { pricesOf, type RefusalError } from './hold-plan.js';
import { tiersDigest } from './instance-store.js';
import { parseDecimal, type Prices } from './money.js';
import { billingDatabase, type BillingDatabase } from './sql.js';
import { WalletEvents, type WalletChange } from './wallet-events.js';
import type { AlertCheck, BillingOptions, Effects } from './billing-types.js';
import { SqliteWalletStore, type WalletStore } from './wallet-store.js';
import { PostgresWalletStore } from './wallet-store-postgres.js';

/** Reacts to a call refused for insufficient_balance on a wallet of `balance`; may return a sentence for the 402. */
export type InsufficientBalanceObserver = (accountId: string, balance: bigint) => Promise<string | null>;

export abstract class BillingCore {
  readonly events: WalletEvents;
  /** This process's identity in billing_instances; its holds carry it as their owner. */
  readonly instanceId = newId('inst');
  /** The database runner; payments run their crediting transactions on it (creditWithin). */
  readonly db: BillingDatabase;
  /** Every statement on wallet rows (./wallet-store.ts), in the database's dialect. */
  readonly wallets: WalletStore;
  protected readonly tiers: Record<TierName, TierPolicy>;
  /** tiersDigest(tiers), recorded with this process in billing_instances. */
  protected readonly tiersDigest: string;
  /** The config file the tiers came from, recorded with this process; null when not from a file. */
  protected readonly configPath: string | null;
  protected readonly fees: Record<TierName, bigint>;
  protected readonly settings: BillingSettings;
  protected readonly logger: Logger;
  protected readonly now: () => Date;
  protected readonly prices = new Map<string, Prices>();
  protected sweeper: NodeJS.Timeout | undefined;
  protected sweeping: Promise<void> | undefined;
  /** Where this process runs, as precisely as its pids are comparable (processHost). */
  protected readonly host = processHost();
  /** When each key was last used, written after its calls' settlements (../keys/key-use.ts). */
  protected readonly keyUse: KeyUse;

  constructor(opts: BillingOptions) {
    this.db = billingDatabase(opts.orm);
    this.wallets = this.db.kind === 'postgresql' ? new PostgresWalletStore(this.db) : new SqliteWalletStore(this.db);
    this.tiers = opts.tiers;
    this.tiersDigest = tiersDigest(opts.tiers);
    this.configPath = opts.configPath ?? null;
    this.fees = Object.fromEntries(Object.entries(opts.tiers).map(([name, t]) => [name, parseDecimal(t.monthly_fee)])) as Record<
      TierName,
      bigint
    >;
    this.settings = opts.settings;
    this.logger = opts.logger;
    this.events = opts.events ?? new WalletEvents();
    this.now = opts.now ?? (() => new Date());
    this.keyUse = new KeyUse(
      (keyId, at) => this.db.transaction((tx) => tx.run(KEY_USE_UPDATE, [at, keyId, at]), { lazySync: true }).then(() => {}),
      (err, keyId) => this.logger.warn({ err, key: keyId }, "an API key's last use could not be written; its next call tries again"),
    );
  }

  private readonly insufficientBalanceObservers = new Set<InsufficientBalanceObserver>();

  /**
   * Called when a call is refused for insufficient_balance, before the refusal is answered
   * (payments: an account with automatic top-up on starts one, which no debit would start when
   * every call is refused). An observer returns a sentence the 402 adds, or null; it should be
   * quick (it delays the refusal) and a failure is logged, never the refusal's. Returns the
   * function that stops observing.
   */
  observeInsufficientBalance(observer: InsufficientBalanceObserver): () => void {
    this.insufficientBalanceObservers.add(observer);
    return () => this.insufficientBalanceObservers.delete(observer);
  }

  protected async afterInsufficientBalance(accountId: string, refusal: RefusalError): Promise<void> {
    for (const observer of this.insufficientBalanceObservers) {
      try {
        const note = await observer(accountId, refusal.balance);
        if (note) refusal.message = `${refusal.message} ${note}`;
      } catch (err) {
        this.logger.error({ err, account: accountId }, 'reacting to an insufficient_balance refusal failed');
      }
    }
  }

  protected publish(effects: WalletChange[]): void {
    for (const change of effects) this.events.publish(change);
  }

  /**
   * After a billing transaction committed: publishes its wallet changes and raises the alerts it
   * left due, each in a transaction of its own (on both databases alike). An alert that cannot be
   * written is logged; the change it is about stands.
   */
  protected async afterCommit(effects: Effects): Promise<void> {
    this.publish(effects.changes);
    for (const check of effects.alerts) await this.raiseAfterCommit(check);
  }

  /** Raises the alerts a committed change left due (./alerts.ts). */
  protected abstract raiseAfterCommit(check: AlertCheck): Promise<void>;

  protected pricesOf(model: ModelConfig): Prices {
    let prices = this.prices.get(model.id);
    if (!prices) this.prices.set(model.id, (prices = pricesOf(model)));
    return prices;
  }
}

/**
 * This process's host for billing_instances: the host name, and on Linux the pid namespace and
 * the boot. Two servers compare pids (a gone process's holds are released at once) only when all
 * three agree: containers sharing a host name but not a pid namespace (host networking), or a
 * clone of a machine, never take each other's live process for a gone one.
 */
export function processHost(): string {
  const read = (f: () => string) => {
    try {
      return f().trim();
    } catch {
      return '';
    }
  };
  const namespace = read(() => readlinkSync('/proc/self/ns/pid'));
  const boot = read(() => readFileSync('/proc/sys/kernel/random/boot_id', 'utf8'));
  return [hostname(), namespace, boot && `boot:${boot}`].filter(Boolean).join(' ').slice(0, 255);
}
