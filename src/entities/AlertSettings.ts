// An account's alert settings: the alert kinds it turned off and the extra addresses that get a
// copy (both JSON arrays), read by the delivery worker before it sends a notification.
import { EntitySchema } from '@mikro-orm/core';
import type { Account } from './Account.js';
import { accountRef, timestamp } from './columns.js';

export class AlertSettings {
  account!: Account;
  /** JSON array of notification kinds. */
  disabled!: string;
  /** JSON array of e-mail addresses. */
  extraRecipients!: string;
  updatedAt!: Date;
}

export const AlertSettingsSchema = new EntitySchema<AlertSettings>({
  class: AlertSettings,
  tableName: 'alert_settings',
  properties: {
    account: { ...accountRef, kind: '1:1', owner: true, primary: true },
    disabled: { type: 'text' },
    extraRecipients: { type: 'text' },
    updatedAt: timestamp,
  },
});
