// The Redis bridge of wallet events (other instances' live balance updates): a Redis that takes
// connections but never answers (frozen) costs no memory per change: each is dropped with a
// warning instead of waiting in a queue until Redis answers.
import { createServer, type Socket } from 'node:net';
import { expect, it } from 'vitest';
import { WalletEvents } from '../src/domain/billing/wallet-events.js';
import { bridgeWalletEvents } from '../src/events/redis-wallet-events.js';
import { waitUntil } from './support/wait.js';

it('drops the changes a frozen Redis does not take, warning, rather than queueing them', async () => {
  const sockets = new Set<Socket>();
  const frozen = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
  });
  await new Promise<void>((r) => frozen.listen(0, '127.0.0.1', r));
  const port = (frozen.address() as { port: number }).port;
  const warnings: string[] = [];
  const events = new WalletEvents();
  const bus = bridgeWalletEvents(events, `redis://127.0.0.1:${port}`, {
    prefix: 'test:',
    logger: { warn: (_o, msg) => warnings.push(msg) },
  });
  try {
    await waitUntil(() => sockets.size >= 2); // both connections are open, and nothing answers on them
    for (let i = 0; i < 3; i++)
      events.publish({
        accountId: 'acct_x',
        balance: 1n,
        transaction: {
          id: `txn_${i}`,
          accountId: 'acct_x',
          type: 'usage',
          amount: -1n,
          balanceAfter: 1n,
          description: 'x',
          reference: null,
          createdAt: new Date(),
        },
      } as Parameters<WalletEvents['publish']>[0]);
    await waitUntil(() => warnings.length > 0, 5000);
    expect(warnings).toContain('wallet events: could not publish a change to the other instances');
  } finally {
    await bus.close();
    for (const s of sockets) s.destroy();
    await new Promise((r) => frozen.close(r));
  }
});
