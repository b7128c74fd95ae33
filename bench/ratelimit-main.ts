// The rate-limiter benchmark's server process: several tollgate servers in one process, one per
// setting (limiter off, in memory, on Redis), each built exactly as `src/main.ts` builds it from
// its own config file and SQLite database. Measured in one process, the settings share the JIT,
// the heap and the process's share of the machine, so what differs between them is the limiter.
// Env: RL_BENCH_CONFIGS, the config files (JSON array); RL_BENCH_DIR, where the databases go.
// Prints one JSON line with the servers' URLs (in the order of the configs) when all are ready.
import path from 'node:path';
import { loadConfig } from '../src/config.js';
import { closeServices, createServices, type Services } from '../src/container.js';
import { pino } from 'pino';
import { type RunningServer, startServer } from '../src/server.js';

const configs = JSON.parse(process.env.RL_BENCH_CONFIGS ?? '[]') as string[];
const dir = process.env.RL_BENCH_DIR!;
// Logs go to stderr (stdout carries the ready line), errors only (each server would warn that the
// sandbox payment processor is active).
const logger = pino({ level: process.env.LOG_LEVEL ?? 'error', base: { service: 'tollgate' } }, pino.destination(2));
const running: { services: Services; server: RunningServer }[] = [];
for (const [i, file] of configs.entries()) {
  const config = loadConfig({
    ...process.env,
    CONFIG: file,
    HOST: '127.0.0.1',
    PORT: '0',
    DATABASE_URL: `sqlite:${path.join(dir, `bench-${i}.db`)}`,
  });
  const services = await createServices(config, logger);
  running.push({ services, server: await startServer(services) });
}
console.log(JSON.stringify({ urls: running.map((r) => r.server.url) }));
process.on('SIGTERM', () => {
  void (async () => {
    for (const r of running) {
      await r.server.shutdown();
      await closeServices(r.services);
    }
    process.exit(0);
  })();
});
