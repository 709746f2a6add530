import { closeSync, openSync, writeSync } from 'node:fs';
import { mkdir, open, readFile, rename, rm, writeFile, type FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { parseRunRecord, type SyncRunRecord } from './run-record';
import type { Exclusive, SyncStateStore } from './sync-state';
import { checkpointLeaf, enoent, gathered, snapshotLeaf } from './state-leaves';

/** The development store: files under a folder (the CLI's default is `.local/sync-state/`). */
export class FileSyncStateStore implements SyncStateStore {
  readonly description: string;
  private readonly logs = new Map<string, number>();
  private readonly starting = new Set<string>();
  constructor(readonly dir: string) {
    this.description = `folder ${dir}`;
  }

  private path(tenant: string, name: string) {
    return join(this.dir, encodeURIComponent(tenant), name);
  }

  private async read(path: string): Promise<Buffer | undefined> {
    try {
      return await readFile(path);
    } catch (err) {
      if (enoent(err)) return undefined;
      throw err;
    }
  }

  private async replace(path: string, bytes: Buffer | string): Promise<void> {
    await mkdir(dirname(path), { recursive: true, mode: 0o700 });
    // Write then rename: a process killed while writing leaves the previous file whole.
    await writeFile(`${path}.tmp`, bytes, { mode: 0o600 });
    await rename(`${path}.tmp`, path);
  }

  async readSnapshot(tenant: string, stream: string) {
    const handle = await this.openIfExists(this.path(tenant, snapshotLeaf(stream)));
    if (!handle) return undefined;
    return (async function* () {
      // One buffer for every chunk: a pass reads its snapshot twice, and a new buffer per chunk would leave the whole
      // snapshot's size in garbage each time.
      const buffer = Buffer.allocUnsafe(256 * 1024);
      try {
        for (let read; (read = (await handle.read(buffer, 0, buffer.length, null)).bytesRead) > 0;)
          yield buffer.subarray(0, read);
      } finally {
        await handle.close();
      }
    })();
  }

  async writeSnapshot(tenant: string, stream: string, snapshot: AsyncIterable<Buffer>) {
    const path = this.path(tenant, snapshotLeaf(stream));
    await mkdir(dirname(path), { recursive: true, mode: 0o700 });
    // Write then rename: a process killed while writing leaves the previous file whole. The log's entries come a
    // page at a time (a few KiB): gathered into one 1 MiB buffer they are a write per MiB, not one each. Each write
    // ends before the next piece is gathered, so nothing is copied but into that buffer.
    const handle = await open(`${path}.tmp`, 'w', 0o600);
    try {
      for await (const piece of gathered(snapshot, 1 << 20, 'reuse')) await handle.write(piece);
    } finally {
      await handle.close();
    }
    await rename(`${path}.tmp`, path);
  }

  async readCheckpoint(tenant: string, stream: string) {
    const handle = await this.openIfExists(this.path(tenant, checkpointLeaf(stream)));
    if (!handle) return undefined;
    // Closed when the stream ends or its reader stops early. Chunks of 256 KiB: larger ones leave more garbage not yet
    // collected at a long pass's peak (docs/benchmarks.md).
    return handle.createReadStream({ highWaterMark: 256 * 1024 }) as AsyncIterable<Buffer>;
  }

  private async openIfExists(path: string): Promise<FileHandle | undefined> {
    try {
      return await open(path, 'r');
    } catch (err) {
      if (enoent(err)) return undefined;
      throw err;
    }
  }

  async appendCheckpoint(tenant: string, stream: string, record: Buffer, options: { create?: boolean } = {}) {
    const path = this.path(tenant, checkpointLeaf(stream));
    if (options.create) {
      await this.closeLog(path);
      return this.replace(path, record);
    }
    // One open descriptor per log and a synchronous append: opening the file or a promise-based write per page
    // costs ten times more (docs/benchmarks.md, "Sync").
    let fd = this.logs.get(path);
    if (fd === undefined) {
      fd = openSync(path, 'a');
      this.logs.set(path, fd);
    }
    writeSync(fd, record);
  }

  private async closeLog(path: string) {
    const fd = this.logs.get(path);
    this.logs.delete(path);
    if (fd !== undefined) closeSync(fd);
  }

  async clearCheckpoint(tenant: string, stream: string) {
    const path = this.path(tenant, checkpointLeaf(stream));
    await this.closeLog(path);
    await rm(path, { force: true });
  }

  async readRun(tenant: string) {
    const bytes = await this.read(this.path(tenant, 'run.json'));
    return bytes && parseRunRecord(bytes.toString('utf8'));
  }

  async writeRun(tenant: string, run: SyncRunRecord | undefined) {
    const path = this.path(tenant, 'run.json');
    if (run) await this.replace(path, JSON.stringify(run));
    else await rm(path, { force: true });
  }

  // One process uses a folder (the CLI, a test): a set of tenants being started is enough.
  async exclusively<T>(tenant: string, work: () => Promise<T>): Promise<Exclusive<T>> {
    if (this.starting.has(tenant)) return { ran: false };
    this.starting.add(tenant);
    try {
      return { ran: true, value: await work() };
    } finally {
      this.starting.delete(tenant);
    }
  }
}

// A page's record rarely nears the 4 MiB block limit, but is split if it does.
