// `npm start`'s first step: compiles the server's TypeScript (src/ but the dashboard, and compat/)
// to plain JavaScript under build/, file by file, so the server runs on node alone.
//
// Why not run the sources through tsx, as the CLI and the tests do: tsx compiles with esbuild's
// `keepNames`, which wraps every named function and closure the server makes in a `__name` call
// (a defineProperty) as it is made, and the request path makes many. Compiled file by file without
// it, each module is its own scope, nothing is renamed, and every name stays what JavaScript gives
// it: the code runs as written. The gateway benchmark measured the difference (README, "Server").
// Source maps are written beside each file, for `--enable-source-maps`.
import { readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { PROJECT_ROOT } from './project-root.js';

/** What `npm start` compiles: the server's folders, and what in them is not the server's. */
export const SERVER_SOURCES = ['src', 'compat'];
const NOT_SERVER = [/^src\/dashboard\//, /\.test\.ts$/, /\.d\.ts$/];

export interface BuildResult {
  outdir: string;
  files: number;
  ms: number;
}

/**
 * Compiles every .ts file under `folders` (relative to the project's root) into `outdir`, keeping
 * the folders' layout (src/main.ts → build/src/main.js). The folders' earlier output is removed
 * first, so a deleted source leaves nothing behind. `outdir` must lie inside the project, where
 * node finds its node_modules and package.json ("type": "module").
 */
export async function buildServer(outdir = path.join(PROJECT_ROOT, 'build'), folders = SERVER_SOURCES): Promise<BuildResult> {
  const started = performance.now();
  const entryPoints = folders.flatMap((folder) =>
    readdirSync(path.join(PROJECT_ROOT, folder), { recursive: true, encoding: 'utf8' })
      .map((file) => path.posix.join(folder, file.split(path.sep).join('/')))
      .filter((file) => file.endsWith('.ts') && !NOT_SERVER.some((re) => re.test(file))),
  );
  for (const folder of folders) rmSync(path.join(outdir, folder), { recursive: true, force: true });
  await build({
    absWorkingDir: PROJECT_ROOT,
    entryPoints,
    outdir,
    outbase: PROJECT_ROOT,
    bundle: false,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    tsconfig: path.join(PROJECT_ROOT, 'tsconfig.json'),
    sourcemap: 'linked',
    logLevel: 'warning',
  });
  return { outdir, files: entryPoints.length, ms: performance.now() - started };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const result = await buildServer();
  process.stderr.write(
    `compiled ${result.files} files into ${path.relative(PROJECT_ROOT, result.outdir)}/ in ${Math.round(result.ms)} ms\n`,
  );
}
