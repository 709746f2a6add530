import type { TableClient } from '@azure/data-tables';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { z } from 'zod';
import { statusOf } from '../errors';
import { lazyTable } from './lazy';

/** What may be known about a delegated session outside the secret store: never a token. */
export const sessionMetadataSchema = z.object({
  username: z.string(),
  name: z.string().optional(),
  connectedAt: z.string(),
  lastRefreshAt: z.string(),
  refreshExpiresAt: z.string(),
  state: z.enum(['connected', 'login-required']),
  reason: z.string().optional(),
});
export type SessionMetadata = z.infer<typeof sessionMetadataSchema>;

export interface SessionMetadataStore {
  get(tenant: string): Promise<SessionMetadata | undefined>;
  put(tenant: string, metadata: SessionMetadata): Promise<void>;
}

export const SESSION_TABLE = 'delegatedsessions';
const PARTITION = 'session';

/** Table storage (Azurite locally), one row per tenant. */
export class TableSessionMetadataStore implements SessionMetadataStore {
  private readonly table: () => Promise<TableClient>;

  /** Given a function, the client (and its SDK) is built on the first read or write. */
  constructor(client: TableClient | (() => TableClient)) {
    this.table = lazyTable(client);
  }

  async get(tenant: string): Promise<SessionMetadata | undefined> {
    const table = await this.table();
    try {
      const entity = await table.getEntity<{ json: string }>(PARTITION, tenant);
      return sessionMetadataSchema.parse(JSON.parse(entity.json));
    } catch (err) {
      if (statusOf(err) === 404) return undefined;
      throw err;
    }
  }

  async put(tenant: string, metadata: SessionMetadata): Promise<void> {
    await (
      await this.table()
    ).upsertEntity({ partitionKey: PARTITION, rowKey: tenant, json: JSON.stringify(metadata) }, 'Replace');
  }
}

/** For the CLI without storage configured: a JSON file beside the development secret file. */
export class FileSessionMetadataStore implements SessionMetadataStore {
  constructor(readonly path: string) {}

  private async all(): Promise<Record<string, SessionMetadata>> {
    try {
      return z.record(z.string(), sessionMetadataSchema).parse(JSON.parse(await readFile(this.path, 'utf8')));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
      throw err;
    }
  }

  async get(tenant: string): Promise<SessionMetadata | undefined> {
    return (await this.all())[tenant];
  }

  async put(tenant: string, metadata: SessionMetadata): Promise<void> {
    const all = { ...(await this.all()), [tenant]: metadata };
    await mkdir(dirname(this.path), { recursive: true, mode: 0o700 });
    const tmp = `${this.path}.${process.pid}.tmp`;
    await writeFile(tmp, JSON.stringify(all, null, 2), { mode: 0o600 });
    await rename(tmp, this.path);
  }
}
