import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';

/** Where each stream's snapshot lives between runs: one object per stream (gzip). */
export interface SnapshotStore {
  get(tenant: string, stream: string): Promise<Buffer | undefined>;
  put(tenant: string, stream: string, snapshot: Buffer): Promise<void>;
}

/** The development store: files under a folder (the CLI's default is `.local/sync-state/`). */
export class FileSnapshotStore implements SnapshotStore {
  constructor(readonly dir: string) {}

  private path(tenant: string, stream: string) {
    return join(this.dir, encodeURIComponent(tenant), `${encodeURIComponent(stream)}.snapshot.gz`);
  }

  async get(tenant: string, stream: string): Promise<Buffer | undefined> {
    try {
      return gunzipSync(await readFile(this.path(tenant, stream)));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }

  async put(tenant: string, stream: string, snapshot: Buffer): Promise<void> {
    const path = this.path(tenant, stream);
    await mkdir(dirname(path), { recursive: true, mode: 0o700 });
    // Write then rename: a run killed while writing leaves the previous snapshot whole.
    await writeFile(`${path}.tmp`, gzipSync(snapshot), { mode: 0o600 });
    await rename(`${path}.tmp`, path);
  }
}
