// Streamed time to first token, A/B between checkouts of tollgate in one run: each checkout (a
// directory holding this repository, `bench/lib.ts` included) runs as its own server against one
// fake upstream, with an enterprise (unbilled) and a developer (billed) key, and every line takes
// turns in slices of STREAM_AB_SLICE_SECONDS (default 1) for STREAM_AB_ROUNDS rounds (default 6),
// the order rotating, so that this machine's bursts of other work fall on all lines alike. Same
// request and measure as the gateways section (./gateways.ts): one stream in flight, the upstream
// spacing its events 2 ms apart, the first content event's arrival; "added" is each round's median
// minus the upstream's own in the same round, and the line's figure the median of those.
//   STREAM_AB_TREES=/work/main,/work/wt-x node --import tsx bench/stream-ab.ts
import type { Pool } from 'undici';
import { fmt, startFakeUpstream, type Child } from './lib.js';
import { openPool } from './openloop.js';
import { streamed, streamOnce, TIERS } from './gateways.js';

const ROUNDS = Number(process.env.STREAM_AB_ROUNDS ?? 6);
const SLICE_SECONDS = Number(process.env.STREAM_AB_SLICE_SECONDS ?? 1);
const TREES = (process.env.STREAM_AB_TREES ?? process.cwd()).split(',');
interface Line {
  name: string;
  path: string;
  headers: Record<string, string>;
  body: string;
  pool: Pool;
  ttft: number[];
  merged: number;
  streams: number;
}

/** One stream: when its first content event came (ms), and whether any read held two. */
async function streamOnceOn(l: Line): Promise<{ status: number; ttft: number; merged: boolean }> {
  const r = await streamOnce(l.pool, l.path, l.headers, l.body);
  return { status: r.status, ttft: r.ttft, merged: r.merged > 0 };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

async function slice(l: Line, seconds: number): Promise<number> {
  const ttft: number[] = [];
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end) {
    const r = await streamOnceOn(l);
    if (r.status !== 200 || Number.isNaN(r.ttft)) throw new Error(`${l.name}: a stream failed (status ${r.status})`);
    ttft.push(r.ttft);
    l.merged += r.merged ? 1 : 0;
    l.streams++;
  }
  return median(ttft);
}

const upstream = await startFakeUpstream();
const children: Child[] = [upstream];
const line = (name: string, url: string, model: string, headers: Record<string, string> = {}): Line => ({
  name,
  path: new URL(url).pathname,
  headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify(streamed(model)),
  pool: openPool(url),
  ttft: [],
  merged: 0,
  streams: 0,
});
try {
  const lines = [line('upstream alone', `${upstream.url}/chat/completions`, 'upstream-chat')];
  for (const tree of TREES) {
    // Each checkout starts its own server with its own bench plumbing (its src/main.ts, its config).
    const lib = (await import(`${tree}/bench/lib.ts`)) as typeof import('./lib.js');
    const server = await lib.startTollgate({ CONFIG: lib.benchConfig(upstream.url, TIERS) });
    children.push(server);
    const enterprise = await lib.createAccount(server.url, 'enterprise');
    const developer = await lib.createAccount(server.url, 'developer', '100000');
    const url = `${server.url}/v1/chat/completions`;
    lines.push(line(`${tree} unbilled`, url, 'chat-bench', { authorization: `Bearer ${enterprise.apiKey}` }));
    lines.push(line(`${tree} billed`, url, 'chat-bench', { authorization: `Bearer ${developer.apiKey}` }));
  }
  for (const l of lines) await slice(l, 2); // warm-up
  for (const l of lines) {
    l.merged = 0;
    l.streams = 0;
  }
  for (let round = 0; round < ROUNDS; round++) {
    for (let k = 0; k < lines.length; k++) {
      const l = lines[(k + round) % lines.length]!;
      l.ttft.push(await slice(l, SLICE_SECONDS));
    }
  }
  const up = lines[0]!;
  console.log(`\n== streamed first token, one in flight: ${ROUNDS} rounds of ${SLICE_SECONDS}s slices, taking turns`);
  for (const l of lines) {
    const added = l.ttft.map((t, r) => t - up.ttft[r]!);
    console.log(
      `  ${l.name.padEnd(36)} p50 ${fmt(median(l.ttft), 3)} ms  added ${l === up ? '' : fmt(median(added), 3)}  (rounds ${added.map((a) => fmt(a)).join(' ')})  merged reads ${l.merged}/${l.streams}`,
    );
  }
} finally {
  for (const c of children) await c.stop();
}
process.exit(0);
