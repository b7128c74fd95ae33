// src/web/express-classes.ts: requests and responses reach express with the app's prototypes
// already, so express's own Object.setPrototypeOf per request changes nothing, and express's
// request and response methods work on them.
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { describe, expect, it } from 'vitest';
import { serverClassesFor } from '../src/web/express-classes.js';

async function serve(withClasses: boolean) {
  const app = express();
  const arrived: { req: boolean; res: boolean }[] = [];
  const handled: { req: boolean; res: boolean }[] = [];
  app.get('/items/:id', (req, res) => {
    handled.push({ req: Object.getPrototypeOf(req) === app.request, res: Object.getPrototypeOf(res) === app.response });
    res.status(201).json({ id: req.params.id, path: req.path, q: req.query.q });
  });
  const server = withClasses ? createServer(serverClassesFor(app), app) : createServer(app);
  server.prependListener('request', (req: IncomingMessage, res) => {
    arrived.push({ req: Object.getPrototypeOf(req) === app.request, res: Object.getPrototypeOf(res) === app.response });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, arrived, handled, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

describe('serverClassesFor', () => {
  it("makes each request and response with the app's express prototypes, which express then leaves as they are", async () => {
    const s = await serve(true);
    try {
      const r = await fetch(`${s.url}/items/7?q=tea`, { headers: { connection: 'close' } });
      expect(r.status).toBe(201);
      expect(r.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(await r.json()).toEqual({ id: '7', path: '/items/7', q: 'tea' });
      expect(s.arrived).toEqual([{ req: true, res: true }]);
      expect(s.handled).toEqual([{ req: true, res: true }]);
    } finally {
      await s.close();
    }
  });

  it('differs from a server made without them, whose objects get their prototypes from express on arrival', async () => {
    const s = await serve(false);
    try {
      const r = await fetch(`${s.url}/items/7?q=tea`, { headers: { connection: 'close' } });
      expect(await r.json()).toEqual({ id: '7', path: '/items/7', q: 'tea' });
      expect(s.arrived).toEqual([{ req: false, res: false }]);
      expect(s.handled).toEqual([{ req: true, res: true }]);
    } finally {
      await s.close();
    }
  });
});
