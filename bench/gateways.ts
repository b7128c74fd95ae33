// `npm run bench` section "gateways": tollgate beside the gateways people pick instead, in one run,
// all forwarding non-streamed and streamed chat to the same fake upstream (a child process):
// - the fake upstream alone (the baseline every "added" figure is taken against);
// - a bare node:http forwarder (./forwarder-main.ts): the floor of any proxy in Node;
// - the Portkey gateway (devDependency @portkey-ai/gateway, started headless on loopback);
// - tollgate as shipped on SQLite (key auth, in-memory rate limiter with limits it never reaches,
//   usage recorded), with an enterprise key (unbilled) and a developer key (billed: from the
//   monthly allocation, then the wallet) on the same server.
// Each round gives every line a slice of BENCH_GW_SLICE_SECONDS (default 1) per measure, the lines
// taking turns (the order rotating from round to round), so that the machine's bursts of other
// work fall on all of them alike; BENCH_GW_ROUNDS (default 8) rounds after a warm-up. Measures:
// 1. latency at one request in flight (closed loop): p50 and p99 over all rounds' requests, and
//    "added" = the line's figure minus the upstream's own;
// 2. throughput at 32 connections (closed loop, 32 in flight): the median slice, with the JS heap
//    allocated and the CPU used per request by the server process (./alloc-probe.ts);
// 3. streaming at one request in flight: time to the first content token (the first SSE event
//    with text), the upstream spacing its events 2 ms apart, and how many network reads brought
//    the client more than one content event (a relay that merges or holds back chunks shows here).
// Ratios against the goals of issue 19 are printed with the quartiles of the per-round ratios.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { pathToFileURL } from 'node:url';
import type { Pool } from 'undici';
import {
  benchConfig,
  type Child,
  compiled,
  createAccount,
  fmt,
  ROOT,
  startFakeUpstream,
  startReporting,
  startTollgate,
  track,
} from './lib.js';
import { openLoop, openPool, percentile, post } from './openloop.js';

const ROUNDS = Number(process.env.BENCH_GW_ROUNDS ?? 8);
const SLICE_SECONDS = Number(process.env.BENCH_GW_SLICE_SECONDS ?? 1);
const CONNECTIONS = 32;
/** BENCH_GW_VERBOSE=1 prints every slice. */
const VERBOSE = process.env.BENCH_GW_VERBOSE === '1';
/**
 * The heap allocated per request before issue 19's work (KB, measured by this section on commit
 * da6550c), for the goal of halving it.
 */
const ALLOC_BEFORE_KB = { unbilled: 172, billed: 180 };
/** node's options for a process the section measures: the allocation probe, compiled. */
const probe = async () => ['--import', pathToFileURL(await compiled('bench/alloc-probe.ts')).href];

// Limits no run here reaches, on the two tiers measured.
/** Limits this machine never reaches, for the tiers the gateway and stream benchmarks use. */
export const TIERS = `tiers:
  enterprise: { rpm: 100000000, tpm: 100000000000 }
  developer: { rpm: 100000000, tpm: 100000000000 }
`;

const chat = (model: string) => ({ model, max_tokens: 16, messages: [{ role: 'user', content: 'Say something short. #tokens=16' }] });
/** A short streamed chat: four tokens, 2 ms apart at the fake upstream. */
export const streamed = (model: string) => ({
  model,
  max_tokens: 16,
  stream: true,
  messages: [{ role: 'user', content: 'Say something short. #tokens=4 #delay=2' }],
});

interface Line {
  name: string;
  url: string;
  model: string;
  headers: Record<string, string>;
  pool: Pool;
  /** The server process, with the allocation probe (none for the upstream itself). */
  server?: Child;
}

/** Non-streamed chat on a line, `concurrency` requests kept in flight for `seconds`. */
const saturate = (l: Line, seconds: number, concurrency: number) =>
  openLoop({ url: l.url, body: chat(l.model), headers: l.headers, pool: l.pool, seconds, rate: 0, concurrency });

interface Samples {
  latency: number[][];
  rps: number[];
  allocKb: number[];
  cpuUs: number[];
  gcPct: number[];
  ttft: number[][];
  lastToken: number[][];
  mergedReads: number;
  streams: number;
  failed: number;
}

/** The q-quantile (0–1) of `xs`, interpolated between neighbours. */
function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  const at = (s.length - 1) * q;
  const lo = Math.floor(at);
  return s[lo]! + (s[Math.min(lo + 1, s.length - 1)]! - s[lo]!) * (at - lo);
}
const median = (xs: number[]) => quantile(xs, 0.5);
const pooled = (slices: number[][], p: number) =>
  percentile(
    slices.flat().sort((a, b) => a - b),
    p,
  );
const quartiles = (xs: number[], digits = 2) => `${fmt(quantile(xs, 0.25), digits)}–${fmt(quantile(xs, 0.75), digits)}`;

/** Sends a message to a probed server and waits for its answer. */
async function ask(child: Child, message: string): Promise<Record<string, number>> {
  const answer = once(child.proc, 'message') as Promise<[Record<string, number>]>;
  child.proc.send(message);
  return (await answer)[0];
}

/** One streamed request: when the first and the last content event arrived, and reads that held more than one. */
export async function streamOnce(pool: Pool, path: string, headers: Record<string, string>, body: string) {
  const started = performance.now();
  let ttft = Number.NaN;
  let last = Number.NaN;
  let merged = 0;
  const status = await post(pool, path, headers, body, (chunk) => {
    // A content event has text; the role event's content is "".
    const events = chunk.toString('latin1').match(/"content":"[^"]/g)?.length ?? 0;
    if (events > 0) {
      last = performance.now() - started;
      if (Number.isNaN(ttft)) ttft = last;
      if (events > 1) merged++;
    }
  });
  return { status, ttft, last, merged };
}

async function streamSlice(line: Line, seconds: number) {
  const path = new URL(line.url).pathname;
  const headers = { 'content-type': 'application/json', ...line.headers };
  const body = JSON.stringify(streamed(line.model));
  const ttft: number[] = [];
  const last: number[] = [];
  let merged = 0;
  let failed = 0;
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end) {
    const r = await streamOnce(line.pool, path, headers, body).catch(() => undefined);
    if (r?.status !== 200 || Number.isNaN(r.ttft)) {
      failed++;
      continue;
    }
    ttft.push(r.ttft);
    last.push(r.last);
    merged += r.merged;
  }
  return { ttft, last, merged, failed };
}

async function startPortkey(): Promise<Child & { url: string }> {
  for (let attempt = 1; ; attempt++) {
    const port = 20000 + Math.floor(Math.random() * 12000);
    const proc = spawn(
      process.execPath,
      [...(await probe()), 'node_modules/@portkey-ai/gateway/build/start-server.js', `--port=${port}`, '--headless'],
      { cwd: ROOT, stdio: ['ignore', 'ignore', 'ignore', 'ipc'] },
    );
    const child = track(proc);
    const url = `http://127.0.0.1:${port}`;
    for (let i = 0; i < 200 && proc.exitCode === null; i++) {
      const up = await fetch(url).then(
        () => true,
        () => false,
      );
      if (up) return { ...child, url };
      await new Promise((r) => setTimeout(r, 100));
    }
    await child.stop();
    if (attempt >= 3) throw new Error('the Portkey gateway did not start');
  }
}

function verdict(ok: boolean) {
  return ok ? 'within' : 'OVER';
}

export async function benchGateways(): Promise<void> {
  const upstream = await startFakeUpstream();
  const children: Child[] = [upstream];
  const lines: Line[] = [];
  try {
    const origin = new URL(upstream.url).origin;
    const { child: forwarder, line: ready } = await startReporting(
      'bench/forwarder-main.ts',
      [],
      { FORWARD_TO: origin },
      { execArgv: await probe(), ipc: true },
    );
    children.push(forwarder);
    const forwarderUrl = (ready as { url: string }).url;
    const portkey = await startPortkey();
    children.push(portkey);
    const tollgate = await startTollgate({ CONFIG: benchConfig(upstream.url, TIERS) }, 'src/main.ts', {
      execArgv: await probe(),
      ipc: true,
    });
    children.push(tollgate);
    const enterprise = await createAccount(tollgate.url, 'enterprise');
    // Billed from its monthly allocation, then (overage) from the wallet.
    const developer = await createAccount(tollgate.url, 'developer', '100000');
    const line = (name: string, url: string, model: string, headers: Record<string, string>, server?: Child): Line => ({
      name,
      url,
      model,
      headers,
      server,
      pool: openPool(url),
    });
    const tollgateLine = (name: string, apiKey: string) =>
      line(name, `${tollgate.url}/v1/chat/completions`, 'chat-bench', { authorization: `Bearer ${apiKey}` }, tollgate);
    lines.push(
      line('upstream alone', `${upstream.url}/chat/completions`, 'upstream-chat', {}),
      line('bare node:http forwarder', `${forwarderUrl}/v1/chat/completions`, 'upstream-chat', {}, forwarder),
      line(
        'Portkey gateway 1.15.2',
        `${portkey.url}/v1/chat/completions`,
        'upstream-chat',
        { 'x-portkey-provider': 'openai', 'x-portkey-custom-host': upstream.url, authorization: 'Bearer x' },
        portkey,
      ),
      tollgateLine('tollgate, enterprise (unbilled)', enterprise.apiKey),
      tollgateLine('tollgate, developer (billed)', developer.apiKey),
    );
    const [UP, FWD, PK, TG_E, TG_D] = [0, 1, 2, 3, 4];
    const samples: Samples[] = lines.map(() => ({
      latency: [],
      rps: [],
      allocKb: [],
      cpuUs: [],
      gcPct: [],
      ttft: [],
      lastToken: [],
      mergedReads: 0,
      streams: 0,
      failed: 0,
    }));

    console.log(
      `\n== gateways: non-streamed and streamed chat to the same fake upstream; ${ROUNDS} rounds, each line a ${SLICE_SECONDS}s slice per measure, taking turns`,
    );
    // Warm-up: JIT, pools, SQLite pages, every path once.
    for (const l of lines) {
      await saturate(l, 2, CONNECTIONS);
      await streamSlice(l, 1);
    }

    for (let round = 0; round < ROUNDS; round++) {
      const order = lines.map((_, i) => (i + round) % lines.length);
      for (const i of order) {
        const l = lines[i]!;
        const r = await saturate(l, SLICE_SECONDS, 1);
        samples[i]!.latency.push(r.latencies);
        samples[i]!.failed += r.failed;
        if (VERBOSE) console.log(`    round ${round} latency    ${l.name.padEnd(32)} p50 ${fmt(r.p50)} ms  p99 ${fmt(r.p99)} ms`);
      }
      for (const i of order) {
        const l = lines[i]!;
        if (l.server) await ask(l.server, 'alloc:start');
        const r = await saturate(l, SLICE_SECONDS, CONNECTIONS);
        const s = samples[i]!;
        s.rps.push(r.rps);
        s.failed += r.failed;
        if (l.server) {
          const a = await ask(l.server, 'alloc:stop');
          s.allocKb.push(a.bytes! / 1024 / r.ok);
          s.cpuUs.push((a.cpuMs! * 1000) / r.ok);
          s.gcPct.push((100 * a.gcMs!) / a.cpuMs!);
        }
        if (VERBOSE)
          console.log(
            `    round ${round} saturated  ${l.name.padEnd(32)} ${fmt(r.rps, 0)} req/s  ${fmt(s.allocKb.at(-1) ?? Number.NaN, 1)} KB/req  ${fmt(s.cpuUs.at(-1) ?? Number.NaN, 0)} µs CPU/req`,
          );
      }
      for (const i of order) {
        const l = lines[i]!;
        const r = await streamSlice(l, SLICE_SECONDS);
        const s = samples[i]!;
        s.ttft.push(r.ttft);
        s.lastToken.push(r.last);
        s.mergedReads += r.merged;
        s.streams += r.ttft.length;
        s.failed += r.failed;
        if (VERBOSE) console.log(`    round ${round} streamed   ${l.name.padEnd(32)} first token p50 ${fmt(median(r.ttft))} ms`);
      }
    }

    // Figures pooled over the rounds; ratios per round, for their quartiles.
    const p50 = samples.map((s) => pooled(s.latency, 50));
    const p99 = samples.map((s) => pooled(s.latency, 99));
    const addedP50 = p50.map((x) => x - p50[UP]!);
    const addedP99 = p99.map((x) => x - p99[UP]!);
    const rps = samples.map((s) => median(s.rps));
    const ttft = samples.map((s) => pooled(s.ttft, 50));
    const lastToken = samples.map((s) => pooled(s.lastToken, 50));
    const perRound = (f: (round: number) => number) => Array.from({ length: ROUNDS }, (_, r) => f(r));
    const roundP = (i: number, r: number, p: number) =>
      percentile(
        [...samples[i]!.latency[r]!].sort((a, b) => a - b),
        p,
      );
    const roundAdded = (i: number, r: number, p: number) => roundP(i, r, p) - roundP(UP, r, p);

    console.log(
      `\n  ${'non-streamed chat'.padEnd(34)} ${'p50'.padStart(8)} ${'p99'.padStart(8)} ${'added p50'.padStart(10)} ${'added p99'.padStart(10)} ${'req/s (32)'.padStart(11)} ${'KB/req'.padStart(7)} ${'CPU µs/req'.padStart(11)}`,
    );
    lines.forEach((l, i) => {
      const s = samples[i]!;
      const added = i === UP ? ['', ''] : [`+${fmt(addedP50[i]!)}`, `+${fmt(addedP99[i]!)}`];
      console.log(
        `  ${l.name.padEnd(34)} ${fmt(p50[i]!).padStart(8)} ${fmt(p99[i]!).padStart(8)} ${added[0]!.padStart(10)} ${added[1]!.padStart(10)} ${fmt(rps[i]!, 0).padStart(11)} ${(s.allocKb.length ? fmt(median(s.allocKb), 1) : '').padStart(7)} ${(s.cpuUs.length ? fmt(median(s.cpuUs), 0) : '').padStart(11)}`,
      );
    });
    console.log('  (ms; p50/p99 at one request in flight, pooled over the rounds; req/s: the median slice at 32 connections;');
    console.log('   KB/req: JS heap allocated by the server process per request; CPU: the server process, per request)');

    console.log(
      `\n  ${'streamed chat, one in flight'.padEnd(34)} ${'first token p50'.padStart(16)} ${'added'.padStart(8)} ${'last token p50'.padStart(15)} ${'added'.padStart(8)} ${'merged reads'.padStart(13)}`,
    );
    lines.forEach((l, i) => {
      const s = samples[i]!;
      if (s.streams === 0) {
        console.log(`  ${l.name.padEnd(34)} every streamed request failed`);
        return;
      }
      console.log(
        `  ${l.name.padEnd(34)} ${fmt(ttft[i]!).padStart(16)} ${(i === UP ? '' : `+${fmt(ttft[i]! - ttft[UP]!)}`).padStart(8)} ${fmt(lastToken[i]!).padStart(15)} ${(i === UP ? '' : `+${fmt(lastToken[i]! - lastToken[UP]!)}`).padStart(8)} ${`${s.mergedReads}/${s.streams}`.padStart(13)}`,
      );
    });
    console.log(
      '  (the upstream sends each event 2 ms after the one before; merged reads: reads that brought more than one content event)',
    );
    const failed = samples.reduce((n, s) => n + s.failed, 0);
    if (failed > 0) console.log(`  failed requests: ${samples.map((s, i) => `${lines[i]!.name} ${s.failed}`).join(', ')}`);

    console.log('\n  goals of issue 19 (ratio: pooled figures; quartiles: of the per-round ratios)');
    for (const [i, label] of [
      [TG_E, 'unbilled'],
      [TG_D, 'billed'],
    ] as const) {
      const r50 = addedP50[i]! / addedP50[PK]!;
      const r99 = addedP99[i]! / addedP99[PK]!;
      console.log(
        `  added p50, ${label.padEnd(8)}: ${fmt(r50, 3)}× Portkey's (rounds ${quartiles(
          perRound((r) => roundAdded(i, r, 50) / roundAdded(PK, r, 50)),
          3,
        )}); goal ≤ 0.5: ${verdict(r50 <= 0.5)}`,
      );
      console.log(
        `  added p99, ${label.padEnd(8)}: ${fmt(r99, 3)}× Portkey's (rounds ${quartiles(
          perRound((r) => roundAdded(i, r, 99) / roundAdded(PK, r, 99)),
          3,
        )}); goal ≤ 1: ${verdict(r99 <= 1)}`,
      );
    }
    const overPk = perRound((r) => samples[TG_D]!.rps[r]! / samples[PK]!.rps[r]!);
    const overFwd = perRound((r) => samples[TG_D]!.rps[r]! / samples[FWD]!.rps[r]!);
    console.log(
      `  throughput, billed: ${fmt(median(overPk), 3)}× Portkey's (quartiles ${quartiles(overPk, 3)}); goal ≥ 2: ${verdict(median(overPk) >= 2)}`,
    );
    console.log(
      `  throughput, billed: ${fmt(median(overFwd), 3)}× the bare forwarder's (quartiles ${quartiles(overFwd, 3)}); goal ≥ 0.35: ${verdict(median(overFwd) >= 0.35)}`,
    );
    for (const [i, label] of [
      [TG_E, 'unbilled'],
      [TG_D, 'billed'],
    ] as const) {
      const added = ttft[i]! - ttft[UP]!;
      console.log(
        `  streaming, ${label.padEnd(8)}: first token +${fmt(added)} ms p50 (rounds ${quartiles(
          perRound((r) => median(samples[i]!.ttft[r]!) - median(samples[UP]!.ttft[r]!)),
        )}), merged reads ${samples[i]!.mergedReads}; goal ≤ 0.5 ms, none merged: ${verdict(added <= 0.5 && samples[i]!.mergedReads === 0)}`,
      );
    }
    for (const [i, label] of [
      [TG_E, 'unbilled'],
      [TG_D, 'billed'],
    ] as const) {
      const kb = median(samples[i]!.allocKb);
      const before = ALLOC_BEFORE_KB[label];
      const goal = `; ${fmt(kb / before, 3)}× the ${before} KB before; goal ≤ 0.5: ${verdict(kb <= before / 2)}`;
      console.log(`  allocation, ${label.padEnd(8)}: ${fmt(kb, 1)} KB per request (quartiles ${quartiles(samples[i]!.allocKb, 1)})${goal}`);
    }
  } finally {
    for (const l of lines) await l.pool.close();
    for (const c of children.reverse()) await c.stop();
  }
}
