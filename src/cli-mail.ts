// The operator CLI's mail commands: `tollgate mail status` (how many notifications are pending,
// sent, failed, skipped, and each failed one with its last error) and `tollgate mail retry`
// (failed messages back to pending with a fresh count of tries; a running server sends them
// within about a second).
import type { CommandGroup } from './cli.js';
import {
  deliveryCounts,
  findNotification,
  listByDelivery,
  retryFailed,
  type NotificationRecord,
} from './domain/notifications/notification-store.js';
import { DomainError } from './domain/errors.js';

function messageJson(n: NotificationRecord) {
  return {
    id: n.id,
    account_id: n.accountId,
    kind: n.kind,
    created_at: n.createdAt.toISOString(),
    attempts: n.attempts,
    next_attempt_at: n.nextAttemptAt?.toISOString() ?? null,
    last_error: n.lastError,
  };
}

export const registerMailCommands: CommandGroup = (program, ctx) => {
  const mail = program.command('mail').description('E-mail delivery of alerts: see what is pending or failed, retry failed messages');

  mail
    .command('status')
    .description('Counts by delivery state, and every failed message with its last error')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      const { billing } = await ctx.services();
      const counts = await deliveryCounts(billing.db);
      const failed = await listByDelivery(billing.db, 'failed', 1000);
      const pending = await listByDelivery(billing.db, 'pending', 1000);
      if (opts.json) {
        ctx.printJson({ counts, failed: failed.map(messageJson), pending: pending.map(messageJson) });
        return;
      }
      const lines = [`pending ${counts.pending}, sent ${counts.sent}, failed ${counts.failed}, skipped ${counts.skipped}`];
      for (const n of pending.filter((p) => p.attempts > 0)) {
        lines.push(
          `retrying ${n.id}  ${n.kind}  account ${n.accountId}  ${n.attempts} tries  next ${n.nextAttemptAt?.toISOString() ?? 'now'}  ${n.lastError ?? ''}`.trimEnd(),
        );
      }
      for (const n of failed)
        lines.push(`failed   ${n.id}  ${n.kind}  account ${n.accountId}  ${n.attempts} tries  ${n.lastError ?? ''}`.trimEnd());
      if (failed.length > 0) lines.push('Retry them with: tollgate mail retry --all (or --id ID)');
      ctx.print(lines.join('\n'));
    });

  mail
    .command('retry')
    .description('Send failed messages again (with a fresh count of tries)')
    .option('--id <id...>', 'the notifications to retry (ntf_…)')
    .option('--all', 'every failed message')
    .option('--json', 'print JSON')
    .action(async (opts: { id?: string[]; all?: boolean; json?: boolean }) => {
      if (!opts.all && !opts.id?.length) throw new DomainError('invalid_value', 'give --id ID (one or more) or --all.');
      const { billing } = await ctx.services();
      if (!opts.all) {
        // An id that names no message is a mistake to say, before anything is queued.
        const found = await Promise.all(opts.id!.map((id) => findNotification(billing.db, id)));
        const unknown = opts.id!.filter((_id, i) => found[i] === null);
        if (unknown.length > 0) throw new DomainError('not_found', `No message with id ${unknown.map((id) => `'${id}'`).join(', ')}.`);
        // Only a failed message is queued again: one sent, pending or skipped is said, not counted as 0.
        const notFailed = found.filter((n) => n !== null && n.delivery !== 'failed');
        if (notFailed.length > 0)
          throw new DomainError(
            'invalid_value',
            `${notFailed.map((n) => `'${n!.id}' is ${n!.delivery}`).join(', ')}, not failed: only failed messages are retried (see tollgate mail status).`,
          );
      }
      const retried = await retryFailed(billing.db, opts.all ? null : opts.id!);
      if (opts.json) ctx.printJson({ retried });
      else ctx.print(`${retried} failed message(s) queued again; a running server sends them within a few seconds.`);
    });
};
