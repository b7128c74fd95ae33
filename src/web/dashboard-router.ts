// The dashboard at /dashboard: the web app built by `vite build` (npm's prepare script, so
// `npm ci && npm start` serves it) from src/dashboard into dist/dashboard. Hashed assets are
// cached for a year; every other path under /dashboard gets index.html (the app routes itself).
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import express from 'express';
import { PROJECT_ROOT } from '../project-root.js';

export const DASHBOARD_DIST = path.join(PROJECT_ROOT, 'dist/dashboard');

const NOT_BUILT = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Dashboard not built</title></head>
<body><main><h1>The dashboard is not built</h1><p>Run <code>npm run dashboard:build</code> (npm ci runs it), or <code>npm run dashboard:dev</code> for the dev server.</p></main></body></html>`;

// Pages are the app's; scripts and styles come only from this server.
const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self' ws: wss:; frame-ancestors 'none'; base-uri 'self'; form-action 'self'";

export function createDashboardRouter(opts: { dist?: string } = {}): express.Router {
  const dist = opts.dist ?? DASHBOARD_DIST;
  const router = express.Router();
  let index: string | null = null;
  const indexHtml = () => {
    if (index === null && existsSync(path.join(dist, 'index.html'))) index = readFileSync(path.join(dist, 'index.html'), 'utf8');
    return index;
  };
  router.use(
    '/dashboard/assets',
    express.static(path.join(dist, 'assets'), { index: false, immutable: true, maxAge: '365d', fallthrough: false }),
  );
  router.get(['/dashboard', '/dashboard/{*rest}'], (_req, res) => {
    const html = indexHtml();
    res.setHeader('Cache-Control', 'no-cache');
    res.setHeader('Content-Security-Policy', CSP);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'same-origin');
    if (html === null) return void res.status(503).type('html').send(NOT_BUILT);
    res.type('html').send(html);
  });
  return router;
}
