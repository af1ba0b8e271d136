import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';

/**
 * Creates a folder and the folders above it that are missing, one level at a time. Node 20's
 * `mkdirSync(dir, { recursive: true })` never returns for a path under /proc (it keeps retrying the
 * ENOENT it gets there), so a DATA_DIR such as /proc/data would hang the start at full CPU; this
 * throws that error instead.
 */
export function makeFolder(dir: string): void {
  const missing: string[] = [];
  for (let at = path.resolve(dir); !existsSync(at); ) {
    missing.unshift(at);
    const up = path.dirname(at);
    if (up === at) break;
    at = up;
  }
  for (const folder of missing) {
    try {
      mkdirSync(folder);
    } catch (err) {
      // Made meanwhile by another process: what was asked for.
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
}
