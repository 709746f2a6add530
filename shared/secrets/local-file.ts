import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { z } from 'zod';
import { SecretNotFound, SecretStoreError } from '../errors';
import type { SecretStore } from './types';

const fileSchema = z.record(z.string(), z.string());

/**
 * Development-only secret store: one JSON file, mode 0600, in a git-ignored folder. Never used when
 * KEY_VAULT_URL is set.
 */
export class LocalFileSecretStore implements SecretStore {
  readonly description: string;
  /** Per file, this process's writes one after another: each is a read-modify-write of the whole file. */
  private static readonly queues = new Map<string, Promise<unknown>>();

  constructor(readonly path: string) {
    this.description = `the local secret file ${path}`;
  }

  private async readAll(): Promise<Record<string, string>> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
      throw new SecretStoreError(`cannot read ${this.path}`, err);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (err) {
      throw new SecretStoreError(`${this.path} is not valid JSON; fix or delete it`, err);
    }
    const result = fileSchema.safeParse(parsed);
    if (!result.success)
      throw new SecretStoreError(`${this.path} must be a JSON object of name → string value`);
    return result.data;
  }

  async get(name: string): Promise<string> {
    const value = (await this.readAll())[name];
    if (value === undefined) throw new SecretNotFound(name, this.description);
    return value;
  }

  delete(name: string): Promise<void> {
    return this.update((all) => {
      delete all[name];
    });
  }

  set(name: string, value: string): Promise<void> {
    return this.update((all) => {
      all[name] = value;
    });
  }

  private update(change: (all: Record<string, string>) => void): Promise<void> {
    const queues = LocalFileSecretStore.queues;
    const next = (queues.get(this.path) ?? Promise.resolve()).then(async () => {
      const all = await this.readAll();
      change(all);
      await this.write(all);
    });
    const settled = next.catch(() => undefined);
    queues.set(this.path, settled);
    // Forget an idle file's queue, so the map does not grow with every path ever used.
    void settled.then(() => queues.get(this.path) === settled && queues.delete(this.path));
    return next;
  }

  private async write(all: Record<string, string>): Promise<void> {
    await mkdir(dirname(this.path), { recursive: true, mode: 0o700 });
    // Write then rename, so a crash never leaves a half-written file; 0600 from the first byte.
    const tmp = `${this.path}.${process.pid}.tmp`;
    await writeFile(tmp, `${JSON.stringify(all, null, 2)}\n`, { mode: 0o600 });
    await chmod(tmp, 0o600);
    await rename(tmp, this.path);
  }
}
