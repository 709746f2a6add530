import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * The function app's folder: the nearest one above `from` that holds host.json — the staged package in Azure
 * (`dist/main.js` is one below it), the project locally. Settings that name files relative to the app
 * (IMPORT_OPERATIONS_FILE=config/…, SYNC_STREAMS_FILE) are resolved against it, not against the worker's working
 * folder, which the Functions host chooses. Without a host.json above `from`, the working folder.
 */
export function appRoot(from: string, cwd = process.cwd()): string {
  for (let dir = from, up = 0; up < 6; up++) {
    if (existsSync(join(dir, 'host.json'))) return dir;
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  return cwd;
}
