// Automatic top-up (the specification's section 2.12): when a charge leaves the balance below the
// account's threshold, when a call is refused for insufficient_balance on a balance below it, or
// when automatic top-up is turned on below it, one top-up of its amount is charged to the saved
// card (Stripe: an off-session PaymentIntent; the sandbox: at once). At most one is in flight per account: a
// conditional claim of the account's slot, taken in the same transaction that re-reads the
// balance, so any number of concurrent charges (on any number of servers) start one. Each attempt
// is its own top-up row whose id keys the processor call, so retrying it never charges twice;
// past the processor's memory of that key (Stripe: 24 hours) an undecided attempt is not asked
// again but failed (a late confirmation still credits it), and the next check starts a new one.
// Failures notify the customer; three in a row turn automatic top-up off. An optional monthly cap
// bounds what automatic top-ups may add in a calendar month.
import type { Logger } from '../../logger.js';
import { DomainError } from '../errors.js';
import { newId } from '../ids.js';
import { NANOS_PER_UNIT, parseDecimal, WALLET_CURRENCY } from '../billing/money.js';
import { periodBounds, periodOf } from '../billing/period.js';
import type { BillingDatabase } from '../billing/sql.js';
import { formatMoney, parseTopUpAmount, quoteTopUp, SALES_THRESHOLD, toCents, type BonusTable } from './amounts.js';
import type { NotifierPort, WalletPort } from './ports.js';
import { ProcessorError, type OffSessionResult, type PaymentProcessor } from './processor.js';
import type { TopUpSettlement } from './top-up-settlement.js';
import {
  claimInFlight,
  findAutoTopup,
  findAutoTopupsOf,
  findCustomer,
  findTopUp,
  insertTopUp,
  recordPendingPayment,
  releaseInFlight,
  saveAutoTopup,
  stalledAutoTopUps,
  sumAutoTopUpsSince,
  type AutoTopupRecord,
  type TopUpRecord,
  UNDECIDED_REASON_START,
} from './top-up-store.js';
import { logBackgroundFailure } from '../../db/unavailable.js';

export interface AutoTopupView {
  enabled: boolean;
  /** Nanos; null until first set. */
  threshold: bigint | null;
  amount: bigint | null;
  consecutiveFailures: number;
  /** Why it was turned off by tollgate (failures), if it was. */
  disabledReason: string | null;
  /** An automatic top-up is being charged now. */
  inFlight: boolean;
}

export interface AutoTopupOptions {
  /** Billing's database: payments' transactions share its transaction runner (and, on SQLite, its group commit). */
  db: BillingDatabase;
  processor: PaymentProcessor;
  settlement: TopUpSettlement;
  wallet: WalletPort;
  notifier: NotifierPort;
  bonusTable: BonusTable;
  /** Where larger top-ups are arranged (payments.sales_contact), named when an amount is over the maximum. */
  salesContact?: string | null;
  /** Most that automatic top-ups may add (amount paid) per calendar month (UTC); null: no cap. */
  maxMonthly: bigint | null;
  /** An attempt still undecided after this long is asked again (same key: same charge). */
  retryAfterSeconds: number;
  logger: Logger;
  now?: () => Date;
}

/**
 * How long a debit trusts what this process last read of the account's settings: a debit that
 * leaves the balance at or above a known threshold (or hits an account known to have automatic
 * top-up off) costs no query. A change made through another server is seen after at most this.
 */
const SETTINGS_TTL_MS = 5_000;
const SETTINGS_CACHE_MAX = 50_000;
/**
 * An attempt undecided this long (at least) is resumed without a debit: longer than any charge
 * takes, so the round never races a check that is still charging.
 */
const STALLED_AFTER_MS = 60_000;
/** Stalled attempts asked again per round of resumeStalled (the rest in the next rounds). */
const STALLED_PER_ROUND = 100;

/** After a failed charge, how long a refused call starts no new one (a client retrying its 402s). */
export const REFUSAL_PAUSE_AFTER_FAILURE_MS = 5 * 60_000;

export type CheckOutcome = 'disabled' | 'in_flight' | 'above_threshold' | 'capped' | 'credited' | 'failed' | 'pending';

export class AutoTopupService {
  private readonly now: () => Date;
  /** Per account, the check running in this process; a debit meanwhile asks for one more round. */
  private readonly running = new Map<string, Promise<void>>();
  private readonly again = new Set<string>();
  private readonly known = new Map<string, KnownSettings>();
  private resumer: NodeJS.Timeout | undefined;

  constructor(private readonly o: AutoTopupOptions) {
    this.now = o.now ?? (() => new Date());
  }

  async getSettings(accountId: string): Promise<AutoTopupView> {
    return autoTopupView(await findAutoTopup(this.o.db, accountId));
  }

  /** The settings of several accounts, in the order asked, with one query (GraphQL's lists of accounts). */
  async getSettingsOf(accountIds: readonly string[]): Promise<AutoTopupView[]> {
    const byAccount = new Map((await findAutoTopupsOf(this.o.db, accountIds)).map((s) => [s.accountId, s]));
    return accountIds.map((id) => autoTopupView(byAccount.get(id) ?? null));
  }

  /**
   * Turns automatic top-up on or off. Enabling needs a threshold (≥ 0) and an amount within the
   * top-up rules (what was set before is kept when left out), and, with a processor that charges
   * a saved card, a card saved by an earlier checkout. Enabling again clears the failure count.
   */
  async updateSettings(accountId: string, input: { enabled: unknown; threshold?: unknown; amount?: unknown }): Promise<AutoTopupView> {
    if (typeof input.enabled !== 'boolean') throw new DomainError('invalid_type', "'enabled' must be true or false.", { param: 'enabled' });
    const enabled = input.enabled;
    const { db } = this.o;
    const current = await findAutoTopup(db, accountId);
    const threshold = input.threshold == null ? (current?.threshold ?? null) : parseThreshold(input.threshold);
    const amount = input.amount == null ? (current?.amount ?? null) : parseTopUpAmount(input.amount, 'amount', this.o.salesContact ?? null);
    if (enabled && threshold === null)
      throw new DomainError('missing_required_parameter', "'threshold' is required to turn automatic top-up on.", { param: 'threshold' });
    if (enabled && amount === null)
      throw new DomainError('missing_required_parameter', "'amount' is required to turn automatic top-up on.", { param: 'amount' });
    if (enabled && !(await this.savedCard(accountId))) {
      throw new DomainError(
        'payment_method_required',
        'Automatic top-up charges the card saved by a checkout: pay one top-up at the checkout first, then turn it on.',
        { param: 'enabled' },
      );
    }
    await saveAutoTopup(db, {
      accountId,
      enabled,
      threshold: threshold ?? 0n,
      amount: amount ?? 0n,
      resetFailures: enabled,
      now: this.now(),
    });
    this.known.delete(accountId);
    const saved = await this.getSettings(accountId);
    // Turned on (or back on) with the balance already below the threshold: no charge may come to
    // start a top-up (every call refused), so the check runs now, as a charge's would. The answer
    // is the settings as saved, before it.
    if (enabled) this.checkInBackground(accountId);
    return saved;
  }

  /**
   * Called when a call was refused for insufficient_balance, with the balance it was refused on,
   * before the 402 is sent: with automatic top-up on and that balance below the threshold, a check
   * starts in the background (the claim keeps it to one top-up at a time, on every server), and the
   * sentence returned tells the caller; otherwise null. Settings read within the last few seconds
   * are trusted, and an account whose last check found a top-up under way or the monthly cap
   * reached is not checked again meanwhile, so a client retrying a 402 in a loop costs no query.
   */
  async afterRefusal(accountId: string, balance: bigint): Promise<string | null> {
    let known = this.known.get(accountId);
    if (!known || Date.now() - known.readAt >= SETTINGS_TTL_MS) known = this.remember(accountId, await findAutoTopup(this.o.db, accountId));
    if (!known.enabled || balance >= known.threshold) return null;
    // A card that was just declined is not charged again because a client retries its 402 (a
    // loop of retries charged it on every one and used up max_consecutive_failures in a second):
    // a refusal starts nothing for REFUSAL_PAUSE_AFTER_FAILURE_MS after a failed charge (the
    // account's next charge still may, as before).
    if (known.failures > 0 && this.now().getTime() - known.updatedAt < REFUSAL_PAUSE_AFTER_FAILURE_MS)
      return `Automatic top-up is on for this account, but the last charge of its saved card failed; a refused call does not try it again for ${REFUSAL_PAUSE_AFTER_FAILURE_MS / 60_000} minutes after a failure. Add credits with a checkout, or update the card.`;
    const settled = known.outcome !== undefined && Date.now() - known.readAt < SETTINGS_TTL_MS;
    if (settled && known.outcome === 'capped') return null;
    // One check at a time, and none queued behind a running one: it answers for this refusal too.
    if ((!settled || known.outcome !== 'in_flight') && !this.running.has(accountId)) this.checkInBackground(accountId);
    return `Automatic top-up is on for this account: a top-up of ${formatMoney(known.amount)} ${WALLET_CURRENCY} from the saved card is being tried (or is already under way); try again once it is credited.`;
  }

  /**
   * Called after a debit committed (a usage charge, a fee) with the balance it left: checks, in
   * the background, whether the balance is now below the account's threshold. Errors are logged,
   * never thrown.
   */
  afterDebit(accountId: string, balance: bigint): void {
    const known = this.known.get(accountId);
    if (known && Date.now() - known.readAt < SETTINGS_TTL_MS && (!known.enabled || balance >= known.threshold)) return;
    this.checkInBackground(accountId);
  }

  /** A check of the account in the background, one at a time: one asked for meanwhile runs after it. */
  private checkInBackground(accountId: string): void {
    if (this.running.has(accountId)) {
      this.again.add(accountId);
      return;
    }
    const task = (async () => {
      do {
        this.again.delete(accountId);
        try {
          const outcome = await this.check(accountId);
          // A failed charge: the next refusal reads the failure from the database (its cool-down).
          if (outcome === 'failed') this.known.delete(accountId);
          const known = this.known.get(accountId);
          if (known && (outcome === 'in_flight' || outcome === 'pending' || outcome === 'capped'))
            known.outcome = outcome === 'capped' ? 'capped' : 'in_flight';
        } catch (err) {
          logBackgroundFailure(this.o.logger, err, 'automatic top-up check failed', { account: accountId });
        }
      } while (this.again.has(accountId));
    })().finally(() => this.running.delete(accountId));
    this.running.set(accountId, task);
  }

  /** Resolves when no background check is running (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.all([...this.running.values()]);
  }

  /**
   * Starts resuming stalled attempts: at start-up and then every STALLED_AFTER (or
   * `retry_after_seconds`, when longer), each account whose attempt has been undecided that long
   * is checked again (the same key: never a second charge). Without it such an attempt (a server
   * stopped between claiming and crediting it) was asked again only after the account's next
   * debit, which a balance too low for any call never brings: the slot stayed taken, the account
   * refused.
   */
  start(): void {
    if (this.resumer) return;
    void this.resumeStalled();
    this.resumer = setInterval(() => void this.resumeStalled(), this.stalledAfterMs());
    this.resumer.unref();
  }

  private stalledAfterMs(): number {
    return Math.max(STALLED_AFTER_MS, this.o.retryAfterSeconds * 1000);
  }

  /** Stops resuming; checks already running end (idle()). */
  stop(): void {
    if (this.resumer) clearInterval(this.resumer);
    this.resumer = undefined;
  }

  /** One round: every stalled account is checked again, in the background; resolves with how many. */
  async resumeStalled(): Promise<number> {
    let accounts: string[];
    try {
      accounts = await stalledAutoTopUps(this.o.db, new Date(this.now().getTime() - this.stalledAfterMs()), STALLED_PER_ROUND);
    } catch (err) {
      logBackgroundFailure(this.o.logger, err, 'automatic top-up: could not look for stalled attempts');
      return 0;
    }
    for (const accountId of accounts) this.checkInBackground(accountId);
    if (accounts.length > 0)
      this.o.logger.info({ accounts: accounts.length }, 'automatic top-up: asking again about attempts left undecided');
    return accounts.length;
  }

  /**
   * One check: claims the account's slot if the balance is below the threshold (and the month's
   * cap allows), then charges. Safe to call concurrently from anywhere: one claim wins.
   */
  async check(accountId: string): Promise<CheckOutcome> {
    const quick = await findAutoTopup(this.o.db, accountId);
    this.remember(accountId, quick);
    // Turned off with an attempt still undecided: that attempt is closed (below), no new one starts.
    if (!quick?.enabled && !quick?.inFlightId) return 'disabled';
    let claim = await this.claim(accountId);
    if (typeof claim !== 'string' && 'cancel' in claim) {
      // Never asked again: asking is charging, and the customer has said no since. A charge the
      // processor did make before is still credited by its confirmation (payment_intent.succeeded).
      await this.o.settlement.markClosed(claim.cancel.id, 'canceled');
      this.o.logger.warn(
        { topUp: claim.cancel.id, account: accountId, since: claim.cancel.createdAt },
        'automatic top-up: an undecided attempt of an account that turned automatic top-up off is canceled, not asked again (a confirmation arriving later still credits it)',
      );
      return 'disabled';
    }
    if (typeof claim !== 'string' && 'giveUp' in claim) {
      // Asked again now, the processor might not know the first attempt and charge a second time.
      await this.o.settlement.markFailed(claim.giveUp.id, { reason: noAnswer(this.o.processor.offSessionRetryWindowMs) });
      this.o.logger.error(
        { topUp: claim.giveUp.id, account: accountId, since: claim.giveUp.createdAt },
        'automatic top-up: the processor never decided this charge; it is not asked again (a confirmation arriving later still credits it)',
      );
      claim = await this.claim(accountId);
    }
    if (typeof claim === 'string') return claim;
    if ('giveUp' in claim) return 'failed';
    if ('cancel' in claim) return 'disabled';
    return this.charge(claim.topUp, claim.customerId);
  }

  /** Whether the processor holds a card to charge for the account; its failure to answer is payment_processor_error. */
  private async savedCard(accountId: string): Promise<boolean> {
    try {
      return await this.o.processor.canChargeOffSession(await findCustomer(this.o.db, accountId, this.o.processor.name));
    } catch (e) {
      if (!(e instanceof ProcessorError)) throw e;
      this.o.logger.error({ err: e, account: accountId }, 'the payment processor could not say whether a card is saved');
      throw new DomainError(
        'payment_processor_error',
        'The payment processor could not be asked whether a card is saved; please try again.',
      );
    }
  }

  private remember(accountId: string, s: AutoTopupRecord | null): KnownSettings {
    if (this.known.size >= SETTINGS_CACHE_MAX) {
      const stale = Date.now() - SETTINGS_TTL_MS;
      for (const [id, entry] of this.known) if (entry.readAt < stale) this.known.delete(id);
      if (this.known.size >= SETTINGS_CACHE_MAX) this.known.clear();
    }
    const entry: KnownSettings = {
      enabled: s?.enabled ?? false,
      threshold: s?.threshold ?? 0n,
      amount: s?.amount ?? 0n,
      failures: s?.consecutiveFailures ?? 0,
      updatedAt: s?.updatedAt.getTime() ?? 0,
      readAt: Date.now(),
    };
    this.known.set(accountId, entry);
    return entry;
  }

  private async claim(
    accountId: string,
  ): Promise<CheckOutcome | { topUp: TopUpRecord; customerId: string | null } | { giveUp: TopUpRecord } | { cancel: TopUpRecord }> {
    const { db } = this.o;
    const { forUpdate } = db;
    const now = this.now();
    return db
      .transaction(async (trx) => {
        const s = await findAutoTopup(trx, accountId, forUpdate);
        if (!s) return 'disabled' as const;
        if (s.inFlightId) {
          const inFlight = await findTopUp(trx, s.inFlightId);
          if (inFlight?.status === 'open') {
            // Undecided for a while (a timeout, a lost event): ask again under the same key.
            if (now.getTime() - inFlight.updatedAt.getTime() < this.o.retryAfterSeconds * 1000) return 'in_flight' as const;
            if (!s.enabled) return { cancel: inFlight };
            const window = this.o.processor.offSessionRetryWindowMs;
            if (window !== null && now.getTime() - inFlight.createdAt.getTime() >= window) return { giveUp: inFlight };
            await trx.run('update top_ups set updated_at = ? where id = ?', [now, inFlight.id]);
            return { topUp: inFlight, customerId: await findCustomer(trx, accountId, inFlight.processor) };
          }
          // Its outcome was written but the slot not freed (should not happen): free it and go on.
          await releaseInFlight(trx, accountId, s.inFlightId, now);
        }
        if (!s.enabled) return 'disabled' as const;
        // Read under the slot's lock: a top-up crediting meanwhile has either committed (and the
        // balance shows it) or still holds the slot.
        const balance = await this.o.wallet.balanceOf(trx, accountId);
        if (balance >= s.threshold) return 'above_threshold' as const;
        if (this.o.maxMonthly !== null) {
          const period = periodOf(now);
          const started = await sumAutoTopUpsSince(trx, accountId, periodBounds(period).start);
          if (started + s.amount > this.o.maxMonthly) {
            await this.o.notifier.enqueue(trx, {
              accountId,
              kind: 'auto_topup_capped',
              dedupeKey: `auto_topup_capped:${accountId}:${period}`,
              payload: {
                period,
                max_monthly: formatMoney(this.o.maxMonthly),
                started: formatMoney(started),
                amount: formatMoney(s.amount),
                currency: WALLET_CURRENCY,
              },
              now,
            });
            this.o.logger.warn({ account: accountId, period }, 'automatic top-up skipped: the monthly cap is reached');
            return 'capped' as const;
          }
        }
        const quote = quoteTopUp(s.amount, this.o.bonusTable);
        const id = newId('atu');
        await insertTopUp(trx, {
          id,
          accountId,
          source: 'auto',
          processor: this.o.processor.name,
          amount: s.amount,
          bonus: quote.bonus,
          bonusBasisPoints: quote.bonusBasisPoints,
          currency: WALLET_CURRENCY,
          idempotencyKey: null,
          requestHash: null,
          expiresAt: null,
          now,
        });
        // SQLite has no row locks (its writer lock serialises us); the conditional claim is the guard.
        if (!(await claimInFlight(trx, accountId, id, now))) throw new SlotTaken();
        const topUp = await findTopUp(trx, id);
        return { topUp: topUp!, customerId: await findCustomer(trx, accountId, this.o.processor.name) };
      })
      .catch((e: unknown) => {
        if (e instanceof SlotTaken) return 'in_flight' as const;
        throw e;
      });
  }

  private async charge(topUp: TopUpRecord, customerId: string | null): Promise<CheckOutcome> {
    let result: OffSessionResult;
    try {
      result = await this.o.processor.chargeOffSession({
        topUpId: topUp.id,
        accountId: topUp.accountId,
        customerId,
        amountCents: toCents(topUp.amount),
        currency: topUp.currency.toLowerCase(),
        description: `Automatic wallet top-up: ${formatMoney(topUp.amount)} ${topUp.currency}`,
      });
    } catch (e) {
      if (!(e instanceof ProcessorError)) throw e;
      // Nothing known to be charged: the slot stays taken until the retry (same key) or an event decides.
      this.o.logger.warn({ err: e, topUp: topUp.id }, 'automatic top-up: the processor could not be asked; will retry with the same key');
      return 'pending';
    }
    switch (result.status) {
      case 'succeeded': {
        const { outcome } = await this.o.settlement.markPaid(topUp.id, { paymentId: result.paymentId });
        return outcome === 'credited' || outcome === 'already_paid' ? 'credited' : 'failed';
      }
      case 'failed':
        await this.o.settlement.markFailed(topUp.id, { reason: result.reason, paymentId: result.paymentId });
        return 'failed';
      case 'pending':
        if (result.paymentId) await recordPendingPayment(this.o.db, topUp.id, result.paymentId, this.now());
        return 'pending';
    }
  }
}

class SlotTaken extends Error {}

/** An account's settings as shown; an account that never set them has automatic top-up off. */
function autoTopupView(s: AutoTopupRecord | null): AutoTopupView {
  if (!s) return { enabled: false, threshold: null, amount: null, consecutiveFailures: 0, disabledReason: null, inFlight: false };
  return {
    enabled: s.enabled,
    threshold: s.threshold,
    amount: s.amount,
    consecutiveFailures: s.consecutiveFailures,
    disabledReason: s.disabledReason,
    inFlight: s.inFlightId !== null,
  };
}

/** What this process last read of an account's settings, and when; with what its last check found, if it left a top-up under way or the cap reached. */
interface KnownSettings {
  enabled: boolean;
  threshold: bigint;
  amount: bigint;
  /** Consecutive failed charges, and when the settings row last changed (a failure's time, then). */
  failures: number;
  updatedAt: number;
  readAt: number;
  outcome?: 'in_flight' | 'capped';
}

function noAnswer(windowMs: number | null): string {
  const hours = Math.round((windowMs ?? 0) / 3600_000);
  return `${UNDECIDED_REASON_START} within ${hours} hours, so it is not asked again; if the card was charged after all, the top-up is credited when the processor confirms it.`;
}

function parseThreshold(value: unknown): bigint {
  // The top-up starts when a charge leaves the balance below the threshold; a balance never goes
  // below 0, so a threshold of 0 would be turned on and never start one.
  const notAbove = () =>
    new DomainError(
      'invalid_value',
      "'threshold' must be more than 0: the top-up starts when a charge leaves the balance below it, and a balance never goes below 0.",
      { param: 'threshold' },
    );
  if (typeof value === 'bigint') {
    if (value <= 0n) throw notAbove();
    return belowSalesThreshold(value);
  }
  if (typeof value !== 'number') throw new DomainError('invalid_type', "'threshold' must be a number.", { param: 'threshold' });
  let nanos: bigint;
  try {
    nanos = parseDecimal(value);
  } catch {
    throw new DomainError('invalid_value', `'threshold' must be a finite number of ${WALLET_CURRENCY}.`, { param: 'threshold' });
  }
  if (nanos <= 0n) throw notAbove();
  return belowSalesThreshold(nanos);
}

/**
 * Automatic top-ups bring the balance back to the threshold, one after each charge or refusal
 * below it: a threshold far above what the account holds (a typo: 100000) would start a top-up
 * after every call until the balance reached it. The threshold is kept below the largest
 * self-serve top-up, so that catching up is at most a few top-ups.
 */
function belowSalesThreshold(nanos: bigint): bigint {
  if (nanos >= BigInt(SALES_THRESHOLD) * NANOS_PER_UNIT)
    throw new DomainError(
      'invalid_value',
      `'threshold' must be below ${formatMoney(BigInt(SALES_THRESHOLD) * NANOS_PER_UNIT)} ${WALLET_CURRENCY}: automatic top-ups bring the balance back up to it, one after each call below it.`,
      { param: 'threshold' },
    );
  return nanos;
}
