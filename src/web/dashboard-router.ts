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

// Pages are the app's; scripts and styles come only from this server, and it connects only to
// this server: its own WebSocket (the host the page was loaded from, named for browsers whose
// 'self' does not cover ws:), never any other host.
const CSP_BASE =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'self'; form-action 'self'";
/** A Host header that is a host name or address with an optional port, and nothing else. */
const PLAIN_HOST = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(:\d{1,5})?$/;

/** The dashboard's CSP for a page loaded through `host`, PUBLIC_URL's host (behind a proxy) allowed too. */
export function dashboardCsp(host: string | undefined, publicUrl?: string): string {
  const hosts = new Set<string>();
  if (host && PLAIN_HOST.test(host)) hosts.add(host);
  try {
    if (publicUrl) hosts.add(new URL(publicUrl).host);
  } catch {
    // an unparsable PUBLIC_URL adds nothing
  }
  const ws = [...hosts].map((h) => ` ws://${h} wss://${h}`).join('');
  return `${CSP_BASE}; connect-src 'self'${ws}`;
}

export function createDashboardRouter(opts: { dist?: string; publicUrl?: () => string } = {}): express.Router {
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
  router.get(['/dashboard', '/dashboard/{*rest}'], (req, res) => {
    const html = indexHtml();
    res.setHeader('Cache-Control', 'no-cache');
    res.setHeader('Content-Security-Policy', dashboardCsp(req.headers.host, opts.publicUrl?.()));
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'same-origin');
    if (html === null) return void res.status(503).type('html').send(NOT_BUILT);
    res.type('html').send(html);
  });
  return router;
}
