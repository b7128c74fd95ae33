// `npm run bench` section "prototypes": what express 5 setting each request's and response's
// prototype costs, and what tollgate's server classes (src/web/express-classes.ts) save. Each run
// is a process of its own (./express-prototypes-main.ts: V8's caches are per process), the two
// variants taking turns for PROTOTYPES_ROUNDS rounds (default 3); the median of each is printed.
import { execFileSync } from 'node:child_process';
import { fmt, ROOT } from './lib.js';

const ROUNDS = Number(process.env.PROTOTYPES_ROUNDS ?? 3);

interface Run {
  kbPerRequest: number;
  cpuUsPerRequest: number;
}

const once = (variant: string): Run =>
  JSON.parse(
    execFileSync(process.execPath, ['--import', 'tsx', 'bench/express-prototypes-main.ts', variant], { cwd: ROOT, encoding: 'utf8' }),
  ) as Run;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export function benchPrototypes(): void {
  console.log(`\n== prototypes: a bare express app, served as usual and with tollgate's server classes; ${ROUNDS} rounds`);
  const runs: Record<string, Run[]> = { express: [], classes: [] };
  for (let i = 0; i < ROUNDS; i++) for (const v of i % 2 ? ['classes', 'express'] : ['express', 'classes']) runs[v]!.push(once(v));
  const line = (name: string, rs: Run[]) => {
    const kb = median(rs.map((r) => r.kbPerRequest));
    const cpu = median(rs.map((r) => r.cpuUsPerRequest));
    console.log(`  ${name.padEnd(44)} ${fmt(kb, 1).padStart(7)} KB/req ${fmt(cpu, 0).padStart(6)} CPU µs/req`);
    return { kb, cpu };
  };
  const a = line('createServer(app) (express sets prototypes)', runs.express!);
  const b = line('createServer(serverClassesFor(app), app)', runs.classes!);
  console.log(`  (client and server in one process, 8 in flight) ratio: heap ${fmt(b.kb / a.kb, 2)}×, CPU ${fmt(b.cpu / a.cpu, 2)}×`);
}
