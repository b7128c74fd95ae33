// The attacker of the "hostile input" bench, in a process of its own so that building and sending
// its bodies does not slow the prober: oversize chat requests from one key, ATTACKERS in flight,
// until SIGTERM; then one JSON line with the count of answers by status.
const [url, apiKey, inFlight] = process.argv.slice(2) as [string, string, string];
const words = Array.from({ length: 112_500 }, () => Math.random().toString(36).slice(2, 9)).join(' ');
const body = Buffer.from(JSON.stringify({ model: 'chat-bench', messages: [{ role: 'user', content: words }] }));
const statuses: Record<number, number> = {};
let running = true;
process.on('SIGTERM', () => (running = false));
await Promise.all(
  Array.from({ length: Number(inFlight) }, async () => {
    while (running) {
      try {
        const res = await fetch(`${url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
          body,
        });
        await res.arrayBuffer();
        statuses[res.status] = (statuses[res.status] ?? 0) + 1;
      } catch {
        statuses[0] = (statuses[0] ?? 0) + 1;
      }
    }
  }),
);
console.log(JSON.stringify(statuses));
