// `npm start`'s first step: compiles the server's TypeScript (src/ but the dashboard, and compat/)
// to plain JavaScript, file by file, so the server runs on node alone.
//
// Why not run the sources through tsx, as the CLI and the tests do: tsx compiles with esbuild's
// `keepNames`, which wraps every named function and closure the server makes in a `__name` call
// (a defineProperty) as it is made, and the request path makes many. Compiled file by file without
// it, each module is its own scope, nothing is renamed, and every name stays what JavaScript gives
// it: the code runs as written. The gateway benchmark measured the difference (README, "Server").
// Source maps are written beside each file, for `--enable-source-maps`.
//
// Each build goes into a folder named by what it was built from (build/<hash>/src/main.js), made
// under a temporary name and renamed into place when complete, and build/current links to the
// latest: sources unchanged since the last start are not compiled again, and two servers started
// at once from one checkout never see each other's half-written or deleted files.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, statSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { build, version as esbuildVersion } from 'esbuild';
import { PROJECT_ROOT } from './project-root.js';

/** What `npm start` compiles: the server's folders, and what in them is not the server's. */
export const SERVER_SOURCES = ['src', 'compat'];
const NOT_SERVER = [/^src\/dashboard\//, /\.test\.ts$/, /\.d\.ts$/];
/** Builds kept besides the newest, for servers still running from them. */
const KEEP_OLDER = 2;
/** A temporary folder this old is a build that died half-way. */
const STALE_TMP_MS = 10 * 60_000;

const OPTIONS = {
  bundle: false,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  sourcemap: 'linked',
} as const;

export interface BuildResult {
  /** The build's folder: `folders` are under it as in the project (src/main.ts → <outdir>/src/main.js). */
  outdir: string;
  files: number;
  ms: number;
  /** The sources had been compiled before: nothing was compiled this time. */
  reused: boolean;
}

/**
 * Compiles every .ts file under `folders` (relative to the project's root) into a folder of `into`
 * named by the sources, the compiler's version and its options, unless it is there already, and
 * points `<into>/current` at it. `into` must lie inside the project, where node finds its
 * node_modules and package.json ("type": "module").
 */
export async function buildServer(into = path.join(PROJECT_ROOT, 'build'), folders = SERVER_SOURCES): Promise<BuildResult> {
  const started = performance.now();
  const entryPoints = folders
    .flatMap((folder) =>
      readdirSync(path.join(PROJECT_ROOT, folder), { recursive: true, encoding: 'utf8' })
        .map((file) => path.posix.join(folder, file.split(path.sep).join('/')))
        .filter((file) => file.endsWith('.ts') && !NOT_SERVER.some((re) => re.test(file))),
    )
    .sort();
  const tsconfig = path.join(PROJECT_ROOT, 'tsconfig.json');
  const hash = createHash('sha256').update(JSON.stringify({ esbuildVersion, OPTIONS })).update(readFileSync(tsconfig));
  for (const file of entryPoints) hash.update(`\0${file}\0`).update(readFileSync(path.join(PROJECT_ROOT, file)));
  const name = hash.digest('hex').slice(0, 16);
  const outdir = path.join(into, name);

  const reused = existsSync(outdir);
  if (!reused) {
    const tmp = path.join(into, `tmp-${process.pid}-${Date.now()}`);
    try {
      await build({
        absWorkingDir: PROJECT_ROOT,
        entryPoints,
        outdir: tmp,
        outbase: PROJECT_ROOT,
        tsconfig,
        logLevel: 'warning',
        ...OPTIONS,
      });
      renameSync(tmp, outdir);
    } catch (e) {
      // Another start finished the same build first: its copy is as good.
      if (!existsSync(outdir)) throw e;
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  }
  // Replaced in one step (a rename), so `current` always leads to a complete build. Left alone when
  // it leads there already: a checkout started before can then run where it may not write.
  const current = path.join(into, 'current');
  if (!reused || readlinkOrNull(current) !== name) {
    const link = path.join(into, `current-${process.pid}`);
    rmSync(link, { force: true });
    symlinkSync(name, link);
    renameSync(link, current);
  }
  try {
    removeOldBuilds(into, name);
  } catch {
    // Clean-up only: another start may be removing the same folders, or they may not be ours to remove.
  }
  return { outdir, files: entryPoints.length, ms: performance.now() - started, reused };
}

function readlinkOrNull(link: string): string | null {
  try {
    return readlinkSync(link);
  } catch {
    return null;
  }
}

/** Keeps the newest build and the KEEP_OLDER before it; removes temporary folders left by a crash. */
function removeOldBuilds(into: string, newest: string): void {
  const now = Date.now();
  const builds: { name: string; mtime: number }[] = [];
  for (const entry of readdirSync(into, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    const mtime = statSync(path.join(into, entry.name)).mtimeMs;
    if (entry.name.startsWith('tmp-')) {
      if (now - mtime > STALE_TMP_MS) rmSync(path.join(into, entry.name), { recursive: true, force: true });
    } else if (/^[0-9a-f]{16}$/.test(entry.name) && entry.name !== newest) {
      builds.push({ name: entry.name, mtime });
    }
  }
  builds.sort((a, b) => b.mtime - a.mtime);
  for (const old of builds.slice(KEEP_OLDER)) rmSync(path.join(into, old.name), { recursive: true, force: true });
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const result = await buildServer();
  const where = path.relative(PROJECT_ROOT, result.outdir);
  process.stderr.write(
    result.reused
      ? `the server's ${result.files} files are compiled already (${where}/)\n`
      : `compiled the server's ${result.files} files into ${where}/ in ${Math.round(result.ms)} ms\n`,
  );
}
