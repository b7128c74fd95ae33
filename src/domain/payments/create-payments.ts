// Builds payments on top of billing: the configured processor, the two seams (crediting inside
// billing's transactions, the notifications outbox), the services, and the hook that starts an
// automatic top-up check after every committed debit. Called once by the composition root.
import type { PaymentsSettings, StripeEnv } from './settings.js';
import type { Logger } from '../../logger.js';
import type { BillingService } from '../billing/billing-service.js';
import { formatDecimal, parseDecimal } from '../billing/money.js';
import { enqueueNotification } from '../notifications/outbox.js';
import { BonusTable } from './amounts.js';
import { AutoTopupService } from './auto-topup-service.js';
import { PaymentsService } from './payments-service.js';
import type { NotifierPort, WalletPort } from './ports.js';
import type { PaymentProcessor, WebhookVerifier } from './processor.js';
import { SandboxProcessor } from './sandbox-processor.js';
import { StripeProcessor } from './stripe-processor.js';
import { TopUpSettlement } from './top-up-settlement.js';

export interface Payments {
  payments: PaymentsService;
  autoTopups: AutoTopupService;
}

export function createPayments(o: {
  billing: BillingService;
  settings: PaymentsSettings;
  stripe: StripeEnv | null;
  /** The address clients reach (checkout links), read when used. */
  publicUrl: () => string;
  logger: Logger;
  now?: () => Date;
}): Payments {
  const { billing, settings, logger } = o;
  let processor: PaymentProcessor;
  let webhooks: WebhookVerifier | null = null;
  if (settings.processor === 'stripe') {
    if (!o.stripe) throw new Error('payments.processor is stripe but the STRIPE_* environment was not read');
    const stripe = new StripeProcessor({ secretKey: o.stripe.secretKey, webhookSecret: o.stripe.webhookSecret, apiBase: o.stripe.apiBase });
    processor = stripe;
    webhooks = stripe;
    logger.info(
      { apiBase: o.stripe.apiBase ?? 'https://api.stripe.com', testMode: o.stripe.secretKey.startsWith('sk_test_') },
      'payments: Stripe Checkout',
    );
  } else {
    processor = new SandboxProcessor(o.publicUrl);
    logger.warn(
      { allowSandbox: settings.allow_sandbox },
      'payments: the SANDBOX test processor is active: payments are simulated and top-ups add credits without charging anyone. Set payments.processor: stripe for real payments.',
    );
  }

  const wallet: WalletPort = {
    creditWithin: async (trx, credit, now, effects) => {
      await billing.creditWithin(
        trx,
        {
          accountId: credit.accountId,
          amount: credit.amount,
          type: credit.type,
          description: credit.description,
          reference: credit.reference,
          idempotencyKey: credit.idempotencyKey,
        },
        now,
        effects,
      );
    },
    takeBackWithin: (trx, take, now, effects) => billing.takeBackWithin(trx, take, now, effects),
    balanceOf: async (db, accountId) => (await billing.wallets.balance(db, accountId)).balance,
    publish: (effects) => billing.publishChanges(effects),
  };
  const notifier: NotifierPort = { enqueue: (db, n) => enqueueNotification(db, n) };
  const bonusTable = new BonusTable(settings.bonus_table);
  const now = o.now ?? (() => new Date());
  const settlement = new TopUpSettlement({
    db: billing.db,
    wallet,
    notifier,
    logger: logger.child({ component: 'payments' }),
    now,
    maxConsecutiveFailures: settings.auto_topup.max_consecutive_failures,
  });
  const payments = new PaymentsService({
    db: billing.db,
    processor,
    webhooks,
    settlement,
    bonusTable,
    salesContact: settings.sales_contact,
    publicUrl: o.publicUrl,
    successUrl: settings.success_url,
    cancelUrl: settings.cancel_url,
    checkoutTtlSeconds: settings.checkout_expires_after_minutes * 60,
    returnUrl: settings.return_url,
    walletBalance: async (accountId) => (await billing.getWallet(accountId)).balance,
    logger: logger.child({ component: 'payments' }),
    now,
  });
  const autoTopups = new AutoTopupService({
    db: billing.db,
    processor,
    settlement,
    wallet,
    notifier,
    bonusTable,
    salesContact: settings.sales_contact,
    maxMonthly: settings.auto_topup.max_monthly === null ? null : parseDecimal(settings.auto_topup.max_monthly),
    retryAfterSeconds: settings.auto_topup.retry_after_seconds,
    logger: logger.child({ component: 'auto-topup' }),
    now,
  });
  // After a debit committed (usage, a fee), check the account's threshold in the background. Not
  // after credits taken back from a refunded or disputed top-up (a negative `topup` row): charging
  // the card again for the money just given back to it would undo the refund.
  billing.events.observe((change) => {
    if (change.transaction.amount < 0n && change.transaction.type !== 'topup') autoTopups.afterDebit(change.accountId, change.balance);
  });
  // A call refused for insufficient_balance: no debit comes while every call is refused, so the
  // refusal itself starts the check (and the 402 says so).
  billing.observeInsufficientBalance((accountId, balance) => autoTopups.afterRefusal(accountId, balance));
  logger.debug({ bonusTable: bonusTable.rows.map((r) => `${formatDecimal(r.minimum)}:${r.percent}%`) }, 'payments: bonus table');
  return { payments, autoTopups };
}
