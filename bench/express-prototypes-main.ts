// One run of the "prototypes" section (./express-prototypes.ts), in a process of its own: a bare
// express 5 app (a middleware and a /v1 handler touching what compat's do: headers, path, query,
// a finish listener, res.json) served by node:http, either as express is usually served
// (`createServer(app)`) or with the server classes tollgate uses (src/web/express-classes.ts);
// an undici client in the same process keeps 8 requests in flight. Prints one JSON line: heap
// allocated and CPU used per request (./allocation.ts), client and server together.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { Pool } from 'undici';
import { serverClassesFor } from '../src/web/express-classes.js';
import { countAllocation } from './allocation.js';

const variant = process.argv[2] === 'classes' ? 'classes' : 'express';
const REQUESTS = Number(process.env.PROTOTYPES_REQUESTS ?? 40_000);
const IN_FLIGHT = 8;

const app = express();
app.use((req, res, next) => {
  res.setHeader('x-request-id', String(req.headers['x-request-id'] ?? 'none'));
  res.on('finish', () => {});
  next();
});
app.use('/v1', (req, res) => {
  res.json({ path: req.path, url: req.originalUrl, query: req.query, key: req.headers.authorization ?? null });
});
const server = variant === 'classes' ? createServer(serverClassesFor(app), app) : createServer(app);
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const pool = new Pool(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, { connections: IN_FLIGHT });
const one = () =>
  pool.request({ path: '/v1/models?limit=1', method: 'GET', headers: { authorization: 'Bearer k' } }).then((r) => r.body.text());
const run = async (n: number) => {
  for (let i = 0; i < n / IN_FLIGHT; i++) await Promise.all(Array.from({ length: IN_FLIGHT }, one));
};

await run(REQUESTS / 2); // warm-up
const stop = countAllocation();
await run(REQUESTS);
const { bytes, cpuMs } = stop();
console.log(JSON.stringify({ variant, kbPerRequest: bytes / REQUESTS / 1024, cpuUsPerRequest: (cpuMs * 1000) / REQUESTS }));
await pool.close();
server.close();
