// Builds the alerts module on top of billing: the mailer (SMTP_URL, or .eml files), the delivery
// worker that sends the outbox, the unusual-usage detector, and the service the doors call.
// Called once by the composition root; started after billing (the worker's leases belong to
// billing's registered instance) and stopped before the database closes.
import type { AlertsSettings, MailEnv } from '../../config-alerts.js';
import type { Logger } from '../../logger.js';
import { createMailer, type Mailer } from '../../mail/mailer.js';
import type { BillingService } from '../billing/billing-service.js';
import { DeliveryWorker } from './delivery-worker.js';
import { NotificationsService } from './notifications-service.js';
import { UnusualUsageDetector } from './unusual-usage.js';

export interface Alerts {
  notifications: NotificationsService;
  delivery: DeliveryWorker;
  unusualUsage: UnusualUsageDetector;
  start(): void;
  stop(): Promise<void>;
}

export function createAlerts(o: {
  billing: BillingService;
  settings: AlertsSettings;
  mail: MailEnv;
  publicUrl: () => string;
  logger: Logger;
  mailer?: Mailer;
}): Alerts {
  const logger = o.logger.child({ component: 'alerts' });
  const mailer = o.mailer ?? createMailer(o.mail, logger);
  const notifications = new NotificationsService({ db: o.billing.db, logger, pollMs: o.settings.delivery.poll_interval_ms });
  const delivery = new DeliveryWorker({
    db: o.billing.db,
    mailer,
    settings: o.settings.delivery,
    owner: o.billing.instanceId,
    publicUrl: o.publicUrl,
    logger,
  });
  const unusualUsage = new UnusualUsageDetector({ db: o.billing.db, settings: o.settings.unusual_usage, logger });
  return {
    notifications,
    delivery,
    unusualUsage,
    start() {
      logger.info({ mail: mailer.describe }, 'alerts: e-mail delivery started');
      delivery.start();
      unusualUsage.start();
    },
    async stop() {
      await unusualUsage.stop();
      await delivery.stop();
      await notifications.close();
    },
  };
}
