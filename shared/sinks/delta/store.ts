import type { ContainerClient } from '@azure/storage-blob';
import { randomUUID } from 'node:crypto';
import {
  link,
  mkdir,
  readdir,
  readFile,
  rename,
  rm,
  stat,
  unlink,
  writeFile,
  copyFile,
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
  /** Every file under `prefix` (a folder path, no trailing `/`), at any depth. */
  list(prefix: string, options?: { abortSignal?: AbortSignal }): Promise<StoredFile[]>;
  /** Writes the file only if there is none: false when one was there (another writer took that name). */
  createIfAbsent(
    path: string,
    body: Buffer | string,
    options?: { abortSignal?: AbortSignal },
  ): Promise<boolean>;
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

  async list(prefix: string) {
    const out: StoredFile[] = [];
    const walk = async (rel: string): Promise<void> => {
      let entries;
      try {
        entries = await readdir(this.at(rel), { withFileTypes: true });
      } catch (err) {
        if (isMissing(err)) return;
        throw err;
      }
      for (const e of entries) {
        const child = rel ? `${rel}/${e.name}` : e.name;
        if (e.isDirectory()) await walk(child);
        else if (e.isFile()) {
          const s = await stat(this.at(child)).catch(() => undefined);
          if (s) out.push({ path: child, size: s.size, modifiedMs: s.mtimeMs });
        }
      }
    };
    await walk(prefix);
    return out;
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

  async list(prefix: string, options: { abortSignal?: AbortSignal } = {}) {
    const container = await this.container();
    const base = this.name('');
    const out: StoredFile[] = [];
    for await (const b of container.listBlobsFlat({
      prefix: `${this.name(prefix)}/`,
      abortSignal: options.abortSignal,
    }))
      out.push({
        path: b.name.slice(base.length),
        size: b.properties.contentLength ?? 0,
        modifiedMs: b.properties.lastModified?.getTime() ?? 0,
      });
    return out;
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
    for (const file of await this.list(prefix, options)) await this.remove(file.path, options);
  }
}
