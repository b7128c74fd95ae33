// Live wallet events across instances: every change this process publishes (after its commit) is
// sent on a Redis channel, and changes from the other processes are handed to this one's
// subscribers (walletUpdated). Only subscribers hear remote changes; reactions such as automatic
// top-up checks stay with the process that made the change. Redis being away costs live events on
// other instances only: nothing is lost from the ledger, and delivery resumes on reconnection.
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import type { WalletChange, WalletEvents } from '../domain/billing/wallet-events.js';
import type { TransactionType } from '../domain/ledger/ledger.js';

interface WireChange {
  from: string;
  accountId: string;
  balance: string;
  transaction: {
    id: string;
    accountId: string;
    type: TransactionType;
    amount: string;
    balanceAfter: string;
    description: string;
    reference: string | null;
    createdAt: string;
  };
}

export interface WalletBusLogger {
  warn(obj: object, msg: string): void;
}

export interface WalletBus {
  close(): Promise<void>;
}

const WARN_EVERY_MS = 10_000;

export function bridgeWalletEvents(events: WalletEvents, redisUrl: string, opts: { prefix: string; logger: WalletBusLogger }): WalletBus {
  const channel = `${opts.prefix}wallet-events`;
  const instance = randomUUID();
  const options = { maxRetriesPerRequest: 1, retryStrategy: (times: number) => Math.min(times * 200, 2000) };
  // A change nobody can send now is dropped, not queued: a Redis that is down, or up but silent,
  // would otherwise hold every billed call's change in memory until it answers.
  const publisher = new Redis(redisUrl, { ...options, enableOfflineQueue: false, commandTimeout: 1000 });
  const subscriber = new Redis(redisUrl, options);
  let lastWarn = -Infinity;
  const warn = (err: unknown, msg: string) => {
    if (Date.now() - lastWarn < WARN_EVERY_MS) return;
    lastWarn = Date.now();
    opts.logger.warn({ err: (err as Error)?.message ?? String(err) }, msg);
  };
  publisher.on('error', (err) => warn(err, 'wallet events: Redis unreachable; other instances miss live wallet events until it is back'));
  subscriber.on('error', (err) =>
    warn(err, 'wallet events: Redis unreachable; live wallet events of other instances are missed until it is back'),
  );
  subscriber.subscribe(channel).catch((err) => warn(err, 'wallet events: could not subscribe (retrying on reconnection)'));
  subscriber.on('message', (_channel: string, message: string) => {
    let wire: WireChange;
    try {
      wire = JSON.parse(message) as WireChange;
    } catch {
      return;
    }
    if (wire.from === instance) return;
    const t = wire.transaction;
    events.deliverRemote({
      accountId: wire.accountId,
      balance: BigInt(wire.balance),
      transaction: { ...t, amount: BigInt(t.amount), balanceAfter: BigInt(t.balanceAfter), createdAt: new Date(t.createdAt) },
    });
  });
  events.forwardTo((change: WalletChange) => {
    const t = change.transaction;
    const wire: WireChange = {
      from: instance,
      accountId: change.accountId,
      balance: String(change.balance),
      transaction: { ...t, amount: String(t.amount), balanceAfter: String(t.balanceAfter), createdAt: t.createdAt.toISOString() },
    };
    publisher
      .publish(channel, JSON.stringify(wire))
      .catch((err) => warn(err, 'wallet events: could not publish a change to the other instances'));
  });
  return {
    async close() {
      events.forwardTo(undefined);
      subscriber.disconnect();
      publisher.disconnect();
    },
  };
}
