// Runs the fake OpenAI-compatible upstream as its own process (the benchmark starts it as a child):
// `node --import tsx test/support/fake-upstream-main.ts --port 9100 [--host 127.0.0.1] [--delay-ms 0]
// [--dimensions 768]`. Prints one JSON line `{"url": ..., "port": ...}` once it listens.
import { parseArgs } from 'node:util';
import { startFakeUpstream } from './fake-upstream.js';

const { values } = parseArgs({
  options: {
    port: { type: 'string' },
    host: { type: 'string' },
    'delay-ms': { type: 'string' },
    dimensions: { type: 'string' },
    'default-tokens': { type: 'string' },
  },
  strict: true,
});

const num = (v: string | undefined): number | undefined => (v === undefined || v === '' ? undefined : Number(v));

const fake = await startFakeUpstream({
  port: num(values.port) ?? num(process.env.PORT) ?? 0,
  host: values.host ?? process.env.HOST ?? '127.0.0.1',
  delayMs: num(values['delay-ms']),
  dimensions: num(values.dimensions),
  defaultTokens: num(values['default-tokens']),
  // Thousands of requests per second would pile up in memory for nobody to read.
  record: false,
});

process.stdout.write(`${JSON.stringify({ url: fake.url, port: fake.port })}\n`);

const stop = () => {
  fake.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
