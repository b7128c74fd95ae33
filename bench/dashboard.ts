// The dashboard's weight and speed: the gzipped JavaScript the first page (the overview of a
// signed-in person) loads (goal ≤ 250 KB), the whole build's, and the time from navigation to the
// first rendered overview (the balance on screen) on loopback, median of BENCH_DASHBOARD_RUNS
// loads (default 7) in Debian's Chromium (CHROMIUM_PATH, default /usr/bin/chromium).
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { launchChromium } from '../test/support/browser.js';
import { benchConfig, fmt, ROOT, startFakeUpstream, startTollgate } from './lib.js';

const DIST = path.join(ROOT, 'dist/dashboard');
const RUNS = Number(process.env.BENCH_DASHBOARD_RUNS ?? 7);
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

const gz = (file: string) => gzipSync(readFileSync(file), { level: 9 }).length;
const kb = (bytes: number) => `${fmt(bytes / 1024, 1)} KB`;

export async function benchDashboard(): Promise<void> {
  console.log('\n== dashboard');
  execFileSync(path.join(ROOT, 'node_modules/.bin/vite'), ['build', '--config', 'src/dashboard/vite.config.ts', '--logLevel', 'warn'], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  const assets = readdirSync(path.join(DIST, 'assets')).filter((f) => f.endsWith('.js'));
  const total = assets.reduce((n, f) => n + gz(path.join(DIST, 'assets', f)), 0);
  if (!existsSync(CHROMIUM)) {
    console.log(
      `all JavaScript, gzipped: ${kb(total)} in ${assets.length} files; first page and first render: skipped (no Chromium at ${CHROMIUM})`,
    );
    return;
  }
  const upstream = await startFakeUpstream();
  const server = await startTollgate({ CONFIG: benchConfig(upstream.url), LOG_LEVEL: 'warn' });
  const browser = await launchChromium(CHROMIUM);
  try {
    const context = await browser.newContext();
    // Sign up through the API from the browser's context, so the session cookie is set for it.
    const signUp = await context.request.post(`${server.url}/graphql`, {
      headers: { 'content-type': 'application/json' },
      data: { query: 'mutation { signUp(email: "bench@example.com", password: "bench password 123") { id } }' },
    });
    if (!signUp.ok()) throw new Error(`sign-up failed: ${await signUp.text()}`);
    const times: number[] = [];
    let firstPage = 0;
    let files = 0;
    for (let i = 0; i < RUNS + 1; i++) {
      const page = await context.newPage();
      const scripts = new Set<string>();
      page.on('request', (r) => r.resourceType() === 'script' && scripts.add(new URL(r.url()).pathname));
      await page.goto(`${server.url}/dashboard/`, { waitUntil: 'commit' });
      await page.getByRole('region', { name: 'Balance' }).getByText('0.00 USD').waitFor();
      const ms = await page.evaluate(() => performance.now());
      if (i === 0) {
        // The first load (cold cache) counts the scripts; the timed ones follow it.
        files = scripts.size;
        firstPage = [...scripts].reduce((n, p) => n + gz(path.join(DIST, p.replace(/^\/dashboard\//, ''))), 0);
      } else times.push(ms);
      await page.close();
    }
    times.sort((a, b) => a - b);
    console.log(
      `first page (overview) JavaScript, gzipped: ${kb(firstPage)} in ${files} files (goal ≤ 250 KB)${firstPage > 250 * 1024 ? '  OVER BUDGET' : ''}`,
    );
    console.log(`all JavaScript, gzipped: ${kb(total)} in ${assets.length} files (the usage page's chart library loads with it only)`);
    console.log(
      `time to first rendered overview on loopback: median ${fmt(times[Math.floor(times.length / 2)]!, 0)} ms (min ${fmt(times[0]!, 0)}, max ${fmt(times.at(-1)!, 0)}; ${times.length} loads, HTTP cache warm)`,
    );
  } finally {
    await browser.close();
    await server.stop();
    await upstream.stop();
  }
}

// Run alone: node --import tsx bench/dashboard.ts
if (import.meta.url === `file://${process.argv[1]}`) {
  benchDashboard().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
