// The project's root folder: the nearest folder above this module holding a package.json. The same
// answer whether this module runs from source (src/) or from `npm start`'s build (build/<hash>/src/).
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

function findRoot(from: string): string {
  for (let dir = from; ; ) {
    if (existsSync(path.join(dir, 'package.json'))) return dir;
    const up = path.dirname(dir);
    if (up === dir) throw new Error(`no package.json above ${from}`);
    dir = up;
  }
}

export const PROJECT_ROOT: string = findRoot(path.dirname(fileURLToPath(import.meta.url)));
