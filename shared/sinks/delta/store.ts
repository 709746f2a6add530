import type { ContainerClient } from '@azure/storage-blob';
import { randomUUID } from 'node:crypto';
import {
  copyFile,
  link,
  mkdir,
  open,
  readdir,
  readFile,
  rename,
  rm,
  stat,
  unlink,
  writeFile,
} from 'node:fs/promises';
import { dirname, join } from 'node:path';

/** A file of a Delta table's folder, as a listing gives it: its path under the root, its size and when it was written. */
export interface StoredFile {
  path: string;
  size: number;
  modifiedMs: number;
}

/**
 * Where Delta tables live: a folder of this machine or a Blob container (and a path in it). Paths are relative to the
 * root and use `/`. The one operation the protocol needs beyond plain files is `createIfAbsent`: a log entry is
 * written only if no writer wrote that version first.
 */
export interface DeltaStore {
  readonly description: string;
  read(path: string, options?: { abortSignal?: AbortSignal }): Promise<Buffer | undefined>;
  /** Bytes `[start, end)` of a file (a data file's footer and the column chunks a reader needs, not the whole file). */
  readRange(
    path: string,
    start: number,
    end: number,
    options?: { abortSignal?: AbortSignal },
  ): Promise<Buffer>;
  /** Every file under `prefix` (a folder path, no trailing `/`), at any depth, as the listing goes: stop when done. */
  list(prefix: string, options?: { abortSignal?: AbortSignal }): AsyncIterable<StoredFile>;
  /** The file on this machine's disk, where it is one (a folder store): read there instead of copied. */
  localPath(path: string): string | undefined;
  /** Writes the file only if there is none: false when one was there (another writer took that name). */
  createIfAbsent(
    path: string,
    body: Buffer | string,
    options?: { abortSignal?: AbortSignal },
  ): Promise<boolean>;
  /**
   * Writes (or replaces) a staged page, where nothing reads it until the stream's end: a write cut short is written
   * again when the run resumes, so it need not be atomic (one call fewer per page than `put` on a folder).
   */
  stage(path: string, body: Buffer | string, options?: { abortSignal?: AbortSignal }): Promise<void>;
  /** Writes (or replaces) the file whole: a reader sees the old bytes or the new ones. */
  put(path: string, body: Buffer | string, options?: { abortSignal?: AbortSignal }): Promise<void>;
  /** Writes the file from a local one (a data file made in a temporary folder). */
  putFile(path: string, local: string, options?: { abortSignal?: AbortSignal }): Promise<void>;
  /** Removes the file; one already gone is not an error. */
  remove(path: string, options?: { abortSignal?: AbortSignal }): Promise<void>;
  /** Removes every file under the folder, and the folder. */
  removeAll(prefix: string, options?: { abortSignal?: AbortSignal }): Promise<void>;
}

const isMissing = (err: unknown) => (err as NodeJS.ErrnoException)?.code === 'ENOENT';

/** `delta:PATH`: tables in a folder. A log entry is created by a hard link, which fails if the name exists. */
export class FolderStore implements DeltaStore {
  readonly description: string;
  constructor(readonly root: string) {
    this.description = `folder ${root}`;
  }

  private at(path: string) {
    return join(this.root, ...path.split('/'));
  }

  async read(path: string) {
    try {
      return await readFile(this.at(path));
    } catch (err) {
      if (isMissing(err)) return undefined;
      throw err;
    }
  }

  async readRange(path: string, start: number, end: number) {
    const file = await open(this.at(path), 'r');
    try {
      const out = Buffer.alloc(end - start);
      let at = 0;
      while (at < out.length) {
        const { bytesRead } = await file.read(out, at, out.length - at, start + at);
        if (!bytesRead) throw new Error(`${this.at(path)} ends before byte ${end}`);
        at += bytesRead;
      }
      return out;
    } finally {
      await file.close();
    }
  }

  async *list(prefix: string): AsyncIterable<StoredFile> {
    let entries;
    try {
      entries = await readdir(this.at(prefix), { withFileTypes: true });
    } catch (err) {
      if (isMissing(err) || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return;
      throw err;
    }
    for (const e of entries) {
      const child = prefix ? `${prefix}/${e.name}` : e.name;
      if (e.isDirectory()) yield* this.list(child);
      else if (e.isFile()) {
        const s = await stat(this.at(child)).catch(() => undefined);
        if (s) yield { path: child, size: s.size, modifiedMs: s.mtimeMs };
      } else yield { path: child, size: 0, modifiedMs: 0 }; // a link or a device: not ours, whatever it is
    }
  }

  localPath(path: string) {
    return this.at(path);
  }

  /** Folders already made for staged pages: one `mkdir` a stream and run, not one a page. */
  private readonly made = new Set<string>();

  async stage(path: string, body: Buffer | string) {
    const target = this.at(path);
    const folder = dirname(target);
    if (!this.made.has(folder)) {
      await mkdir(folder, { recursive: true });
      this.made.add(folder);
    }
    try {
      await writeFile(target, body);
    } catch (err) {
      if (!isMissing(err)) throw err;
      this.made.delete(folder); // removed meanwhile (a run's staging cleared): made again
      await mkdir(folder, { recursive: true });
      await writeFile(target, body);
    }
  }

  /** Written whole beside the target, then linked to its name: the link fails if the name exists (atomically). */
  async createIfAbsent(path: string, body: Buffer | string) {
    const target = this.at(path);
    await mkdir(dirname(target), { recursive: true });
    const tmp = `${target}.${randomUUID()}.tmp`;
    await writeFile(tmp, body);
    try {
      await link(tmp, target);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw err;
    } finally {
      await unlink(tmp).catch(() => undefined);
    }
  }

  async put(path: string, body: Buffer | string) {
    const target = this.at(path);
    await mkdir(dirname(target), { recursive: true });
    const tmp = `${target}.${randomUUID()}.tmp`;
    await writeFile(tmp, body);
    await rename(tmp, target);
  }

  async putFile(path: string, local: string) {
    const target = this.at(path);
    await mkdir(dirname(target), { recursive: true });
    const tmp = `${target}.${randomUUID()}.tmp`;
    await copyFile(local, tmp);
    await rename(tmp, target);
  }

  async remove(path: string) {
    await rm(this.at(path), { force: true });
  }

  async removeAll(prefix: string) {
    await rm(this.at(prefix), { recursive: true, force: true });
    for (const folder of this.made) if (folder.startsWith(this.at(prefix))) this.made.delete(folder);
  }
}

/**
 * `delta` on Blob Storage (Azurite, a storage account, OneLake): a container and a path in it. A log entry is
 * created with `If-None-Match: *`, which the service refuses (409) when the blob exists.
 */
export class BlobStore implements DeltaStore {
  readonly description: string;
  constructor(
    private readonly container: () => Promise<ContainerClient>,
    readonly where: { container: string; prefix: string; account: string },
  ) {
    this.description = `Blob ${where.account}/${where.container}${where.prefix ? `/${where.prefix}` : ''}`;
  }

  private name(path: string) {
    return this.where.prefix ? `${this.where.prefix}/${path}` : path;
  }

  async read(path: string, options: { abortSignal?: AbortSignal } = {}) {
    const blob = (await this.container()).getBlockBlobClient(this.name(path));
    try {
      return await blob.downloadToBuffer(undefined, undefined, { abortSignal: options.abortSignal });
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode === 404) return undefined;
      throw err;
    }
  }

  async readRange(path: string, start: number, end: number, options: { abortSignal?: AbortSignal } = {}) {
    const blob = (await this.container()).getBlockBlobClient(this.name(path));
    return blob.downloadToBuffer(start, end - start, { abortSignal: options.abortSignal });
  }

  async *list(prefix: string, options: { abortSignal?: AbortSignal } = {}): AsyncIterable<StoredFile> {
    const container = await this.container();
    const base = this.name('');
    for await (const b of container.listBlobsFlat({
      prefix: `${this.name(prefix)}/`,
      abortSignal: options.abortSignal,
    }))
      yield {
        path: b.name.slice(base.length),
        size: b.properties.contentLength ?? 0,
        modifiedMs: b.properties.lastModified?.getTime() ?? 0,
      };
  }

  localPath() {
    return undefined;
  }

  async stage(path: string, body: Buffer | string, options: { abortSignal?: AbortSignal } = {}) {
    await this.put(path, body, options);
  }

  async createIfAbsent(path: string, body: Buffer | string, options: { abortSignal?: AbortSignal } = {}) {
    const blob = (await this.container()).getBlockBlobClient(this.name(path));
    try {
      await blob.upload(body, Buffer.byteLength(body), {
        conditions: { ifNoneMatch: '*' },
        abortSignal: options.abortSignal,
      });
      return true;
    } catch (err) {
      const status = (err as { statusCode?: number }).statusCode;
      if (status === 409 || status === 412) return false;
      throw err;
    }
  }

  async put(path: string, body: Buffer | string, options: { abortSignal?: AbortSignal } = {}) {
    const blob = (await this.container()).getBlockBlobClient(this.name(path));
    await blob.upload(body, Buffer.byteLength(body), { abortSignal: options.abortSignal });
  }

  async putFile(path: string, local: string, options: { abortSignal?: AbortSignal } = {}) {
    const blob = (await this.container()).getBlockBlobClient(this.name(path));
    await blob.uploadFile(local, { abortSignal: options.abortSignal });
  }

  async remove(path: string, options: { abortSignal?: AbortSignal } = {}) {
    const blob = (await this.container()).getBlockBlobClient(this.name(path));
    await blob.deleteIfExists({ abortSignal: options.abortSignal });
  }

  async removeAll(prefix: string, options: { abortSignal?: AbortSignal } = {}) {
    const files: string[] = [];
    for await (const file of this.list(prefix, options)) files.push(file.path);
    for (const file of files) await this.remove(file, options);
  }
}
