// Per-account alert settings: which alerts are e-mailed (every one can be turned off except
// receipts) and up to five extra recipients who get a copy. The low-balance threshold and the
// spending limit stay billing's settings (AccountSettings). An alert turned off is still written
// to the feed; it is only not e-mailed (its delivery shows `skipped`).
import { EMAIL_ADDRESS_RULE, isEmailAddress, isKnownEmailAddress } from '../email-address.js';
import { DomainError } from '../errors.js';
import { date, exec, inList, rows, type Db } from '../billing/sql.js';
import { ALERTS, OPTIONAL_ALERTS, type Alert } from './outbox.js';

export const MAX_EXTRA_RECIPIENTS = 5;

export interface AlertSettingsView {
  accountId: string;
  /** Every alert with whether it is e-mailed (receipts always are). */
  enabled: Record<Alert, boolean>;
  extraRecipients: string[];
  updatedAt: Date | null;
}

export interface AlertSettingsInput {
  /** Alerts to turn on (true) or off (false); those left out keep their setting. */
  enabled?: Partial<Record<Alert, boolean | null | undefined>>;
  /** Replaces the list when given. */
  extraRecipients?: string[] | null;
}

function view(accountId: string, disabled: string[], extra: string[], updatedAt: Date | null): AlertSettingsView {
  const enabled = Object.fromEntries(ALERTS.map((a) => [a, a === 'receipt' || !disabled.includes(a)])) as Record<Alert, boolean>;
  return { accountId, enabled, extraRecipients: extra, updatedAt };
}

export async function getAlertSettings(db: Db, accountId: string): Promise<AlertSettingsView> {
  const [settings] = await getAlertSettingsOf(db, [accountId]);
  return settings!;
}

/** The settings of several accounts, in their order, in one query (GraphQL's list of accounts). */
export async function getAlertSettingsOf(db: Db, accountIds: readonly string[]): Promise<AlertSettingsView[]> {
  if (accountIds.length === 0) return [];
  const { ids, list } = inList(accountIds);
  const found = await rows<{ account_id: string; disabled: string; extra_recipients: string; updated_at: unknown }>(
    db,
    `select account_id, disabled, extra_recipients, updated_at from alert_settings where account_id in ${list}`,
    ids,
  );
  const byAccount = new Map(found.map((r) => [r.account_id, r]));
  return accountIds.map((id) => {
    const r = byAccount.get(id);
    if (!r) return view(id, [], [], null);
    return view(id, JSON.parse(r.disabled) as string[], JSON.parse(r.extra_recipients) as string[], date(r.updated_at));
  });
}

/** Validates and saves a change; returns the settings after it. */
export async function updateAlertSettings(db: Db, accountId: string, input: AlertSettingsInput, now: Date): Promise<AlertSettingsView> {
  const current = await getAlertSettings(db, accountId);
  const disabled = new Set(OPTIONAL_ALERTS.filter((a) => !current.enabled[a]));
  for (const [alert, on] of Object.entries(input.enabled ?? {})) {
    if (on == null) continue;
    if (!(ALERTS as readonly string[]).includes(alert))
      throw new DomainError('invalid_value', `Unknown alert '${alert}'.`, { param: alert });
    if (alert === 'receipt') {
      if (!on)
        throw new DomainError('invalid_value', 'Receipts cannot be turned off: they are the record of a payment.', { param: 'receipt' });
      continue;
    }
    if (on) disabled.delete(alert as Alert);
    else disabled.add(alert as Alert);
  }
  let extra = current.extraRecipients;
  if (input.extraRecipients != null) extra = validateRecipients(input.extraRecipients, current.extraRecipients);
  const accounts = await rows<{ id: string }>(db, 'select id from accounts where id = ?', [accountId]);
  if (!accounts[0]) throw new DomainError('not_found', `No account with id '${accountId}'.`, { param: 'account_id' });
  const disabledJson = JSON.stringify([...disabled].sort());
  const extraJson = JSON.stringify(extra);
  await exec(
    db,
    'insert into alert_settings (account_id, disabled, extra_recipients, updated_at) values (?, ?, ?, ?) ' +
      'on conflict (account_id) do update set disabled = excluded.disabled, extra_recipients = excluded.extra_recipients, updated_at = excluded.updated_at',
    [accountId, disabledJson, extraJson, now],
  );
  return view(accountId, [...disabled], extra, now);
}

/** The new list; an address already among the `kept` (set before addresses had to be ASCII) stays as it was. */
function validateRecipients(list: string[], kept: readonly string[]): string[] {
  const seen = new Map<string, string>();
  for (const raw of list) {
    const email = typeof raw === 'string' ? raw.trim() : '';
    if (!isEmailAddress(email) && !(kept.includes(email) && isKnownEmailAddress(email))) {
      throw new DomainError(
        'invalid_value',
        `'extraRecipients' must hold e-mail addresses: each ${EMAIL_ADDRESS_RULE}; got '${String(raw).slice(0, 80)}'.`,
        { param: 'extraRecipients' },
      );
    }
    if (!seen.has(email.toLowerCase())) seen.set(email.toLowerCase(), email);
  }
  if (seen.size > MAX_EXTRA_RECIPIENTS) {
    throw new DomainError('invalid_value', `At most ${MAX_EXTRA_RECIPIENTS} extra recipients; got ${seen.size}.`, {
      param: 'extraRecipients',
    });
  }
  return [...seen.values()];
}
