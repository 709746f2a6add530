import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { CATALOG_SETTINGS } from '../../catalog/settings';
import { isLoopback, optional, partOf, type AppConfig } from '../../config';
import { systemClock } from '../../clock';
import { lazyContainer } from '../../state/lazy';
import { folderOf } from '../dir';
import { SINK_OUTPUT } from '../output';
import type { SinkContext, SinkModule, SinkSpec } from '../types';
import { ROWS_PER_FILE } from './rolling';
import { DeltaSink } from './sink';
import { BlobStore, FolderStore, type DeltaStore } from './store';

export { DeltaSink } from './sink';
export { ROWS_PER_FILE } from './rolling';
export { appIdOf, runVersion } from './marks';
export { FolderStore, BlobStore, type DeltaStore } from './store';
export { readSnapshot } from './log';
export { housekeep } from './retention';

/**
 * Where DELTA_URL may point, and so where the app sends its storage token: Azure Storage's blob and Data Lake
 * endpoints (the public cloud, its sovereign clouds, Azure DNS zone endpoints) and OneLake's (global or regional).
 */
const STORAGE_HOST =
  /^[a-z0-9]{3,24}\.(?:blob|dfs)\.(?:core\.windows\.net|core\.usgovcloudapi\.net|core\.chinacloudapi\.cn|z\d{2}\.(?:blob|dfs)\.storage\.azure\.net)$|^(?:[a-z0-9-]+-)?onelake\.(?:blob|dfs)\.fabric\.microsoft\.com$/;

/** The Blob API's host for a Data Lake (dfs) one: the same storage, which the Blob SDK speaks to. */
const blobHost = (host: string) => host.replace(/\.dfs\./g, '.blob.');

/**
 * The retention floor: as Delta's own engines keep it (Spark and delta-rs refuse a VACUUM under 168 hours unless told
 * otherwise). Less would delete what a reader of a recent version still reads, or what another writer sharing the
 * table (an app of another tenant) has uploaded and not yet committed.
 */
export const RETENTION_FLOOR_HOURS = 168;

/** The container the `delta` sink writes to in the app's own storage account, when DELTA_URL does not name one. */
export const DELTA_CONTAINER = 'delta-tables';

const settings = {
  DELTA_URL: optional(
    z
      .url({ protocol: /^https?$/, error: 'an https URL of a container (and a folder in it)' })
      .refine((u) => {
        const url = new URL(u);
        // Loopback is Azurite's (path-style: the account, then the container); checked against development below.
        return isLoopback(url) || (url.protocol === 'https:' && STORAGE_HOST.test(url.hostname));
      }, 'must be an https URL on Azure Storage (ACCOUNT.blob.core.windows.net, ACCOUNT.dfs.core.windows.net) or OneLake (onelake.blob.fabric.microsoft.com): the app sends its storage token there')
      .refine(
        (u) => new URL(u).pathname.split('/').filter(Boolean).length >= (isLoopback(new URL(u)) ? 2 : 1),
        'must name a container: https://ACCOUNT.blob.core.windows.net/CONTAINER[/FOLDER]',
      )
      .refine(
        (u) => !new URL(u).search,
        'must not carry a query (no SAS: the app signs in with its managed identity)',
      ),
  ).meta({
    description:
      'Where the `delta` sink keeps its tables when not in the app’s storage account: `https://ACCOUNT.blob.core.windows.net/CONTAINER[/FOLDER]`, or a Fabric lakehouse’s `https://onelake.blob.fabric.microsoft.com/WORKSPACE/LAKEHOUSE.Lakehouse/Tables`; the app signs in with its managed identity (Storage Blob Data Contributor, or a workspace role that can write).',
    default: 'container `delta-tables` of AzureWebJobsStorage',
    usedBy: 'sync (delta sink)',
    group: 'sinks',
  }),
  DELTA_RETENTION_HOURS: optional(
    z.coerce
      .number()
      .int('a whole number')
      .min(
        RETENTION_FLOOR_HOURS,
        `at least ${RETENTION_FLOOR_HOURS} (7 days, the floor Delta's own engines keep: less deletes files a reader of a recent version, or another app writing the same table, still needs)`,
      )
      .max(87_600, 'at most 87600 (ten years)'),
  ).meta({
    description:
      'How long a data file the tables no longer use is kept for readers of older versions (time travel) before the sync deletes it, as Delta’s VACUUM does; a table’s own `delta.deletedFileRetentionDuration`, where longer, wins. The sync deletes only files it wrote, in tables it made.',
    default: '`168` (7 days)',
    usedBy: 'sync (delta sink)',
    group: 'sinks',
  }),
  DELTA_ROWS_PER_FILE: optional(
    z.coerce.number().int('a whole number').min(1, 'at least 1').max(10_000_000, 'at most 10000000'),
  ).meta({
    description:
      'About how many rows a data file of a current-records table holds, when the table is made: its keys are spread over that many files by a hash, so a small change rewrites few of them.',
    default: '`10000`',
    usedBy: 'sync (delta sink)',
    group: 'sinks',
  }),
  DELTA_DELETION_VECTORS: optional(z.enum(['true', 'false'], { error: 'true or false' })).meta({
    description:
      'Whether a new current-records table gets deletion vectors (reader 3 / writer 7): a run then marks the rows it replaces instead of writing their files again (Spark 3.4+, Fabric, Databricks and delta-rs read them). `false` for a reader that cannot; a table keeps what it was made with (and its own `delta.enableDeletionVectors`).',
    default: '`true`',
    usedBy: 'sync (delta sink)',
    group: 'sinks',
  }),
  DELTA_CHECKPOINT_INTERVAL: optional(
    z.coerce.number().int('a whole number').min(1, 'at least 1').max(1_000, 'at most 1000'),
  ).meta({
    description:
      'A checkpoint of a table’s log every this many versions, so that readers replay few commits.',
    default: '`10`',
    usedBy: 'sync (delta sink)',
    group: 'sinks',
  }),
};

type Settings = { [K in keyof typeof settings]: z.output<(typeof settings)[K]> };

export interface DeltaSettings {
  url?: string;
  retentionHours: number;
  checkpointInterval: number;
  rowsPerFile: number;
  deletionVectors: boolean;
}

const deltaSettings = (config: AppConfig): DeltaSettings =>
  (config.sinks.delta as DeltaSettings | undefined) ?? {
    retentionHours: RETENTION_FLOOR_HOURS,
    checkpointInterval: 10,
    rowsPerFile: ROWS_PER_FILE,
    deletionVectors: true,
  };

const storageService = () =>
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  require('../../state/blob-service') as typeof import('../../state/blob-service');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const blobSdk = () => require('@azure/storage-blob') as typeof import('@azure/storage-blob');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const credentials = () => require('../../secrets/credential') as typeof import('../../secrets/credential');

/** The store of a `delta` entry: a folder (`delta:PATH`), DELTA_URL, or the app's storage account. */
export function deltaStore(spec: SinkSpec, context: SinkContext): DeltaStore {
  if (spec.argument) return new FolderStore(folderOf(spec.argument, context.cwd));
  const { url } = deltaSettings(context.config);
  if (url) {
    const u = new URL(url);
    const segments = u.pathname.split('/').filter(Boolean).map(decodeURIComponent);
    // Azurite (development only) is path-style: the account comes first, and signs in with its development token.
    const local = isLoopback(u);
    const [container, ...rest] = local ? segments.slice(1) : segments;
    const service = new (blobSdk().BlobServiceClient)(
      local ? `${u.origin}/${segments[0]}` : `https://${blobHost(u.host)}`,
      local ? storageService().emulatorCredential() : credentials().azureCredential(context.config),
    );
    // The container is the operator's and is never created here: OneLake refuses to create a workspace (its container)
    // through the Blob API, and a container that is missing is better named by doctor than made by a typo.
    const client = service.getContainerClient(container);
    return new BlobStore(async () => client, {
      account: local ? `${u.host}/${segments[0]}` : blobHost(u.host),
      container,
      prefix: rest.join('/'),
    });
  }
  const service = context.clients?.blobService?.() ?? storageService().blobService(context.config);
  return new BlobStore(lazyContainer(service, DELTA_CONTAINER), {
    account: service.accountName,
    container: DELTA_CONTAINER,
    prefix: '',
  });
}

export const deltaSink: SinkModule = {
  kind: 'delta',
  usage: 'delta[:PATH]',
  argument: z.string().min(1, 'needs a folder after "delta:", or nothing (Blob Storage)').optional(),
  settings: {
    shape: settings,
    refine(s, issue) {
      const url = s.DELTA_URL as string | undefined;
      if (
        url &&
        isLoopback(new URL(url)) &&
        String(s.AZURE_FUNCTIONS_ENVIRONMENT).toLowerCase() !== 'development'
      )
        issue(
          'DELTA_URL',
          'a loopback address is Azurite’s, for development only (AZURE_FUNCTIONS_ENVIRONMENT=Development): in Azure, name the storage account or OneLake',
        );
    },
    read(raw): DeltaSettings | undefined {
      const s = raw as Settings;
      // Undefined when none is set: the delta sink then keeps its defaults (and other sinks' configuration is all there is).
      if (Object.keys(settings).every((k) => s[k as keyof Settings] === undefined)) return undefined;
      return {
        url: s.DELTA_URL,
        retentionHours: s.DELTA_RETENTION_HOURS ?? RETENTION_FLOOR_HOURS,
        checkpointInterval: s.DELTA_CHECKPOINT_INTERVAL ?? 10,
        rowsPerFile: s.DELTA_ROWS_PER_FILE ?? ROWS_PER_FILE,
        deletionVectors: s.DELTA_DELETION_VECTORS !== 'false',
      };
    },
  },
  requires: (spec, settings) => {
    if (spec.argument)
      return settings.hosted
        ? 'delta:PATH writes to a folder of this machine, and in Azure the app runs from a read-only package: use delta (Blob Storage or DELTA_URL) there'
        : undefined;
    const own = settings.own as DeltaSettings | undefined;
    return own?.url || settings.storage
      ? undefined
      : 'the delta sink needs storage (AzureWebJobsStorage) or DELTA_URL, or a folder: delta:PATH';
  },
  create: (spec, context) => {
    const s = deltaSettings(context.config);
    return new DeltaSink(deltaStore(spec, context), {
      schemaChanges: partOf(context.config, CATALOG_SETTINGS).schemaChanges,
      rejected: partOf(context.config, SINK_OUTPUT).rejectedRecords,
      retentionHours: s.retentionHours,
      checkpointInterval: s.checkpointInterval,
      rowsPerFile: s.rowsPerFile,
      deletionVectors: s.deletionVectors,
      clock: context.clock ?? systemClock,
    });
  },
  async doctor(spec, context, signal) {
    const store = deltaStore(spec, context);
    // Creating a hidden file only if absent, then removing it, is what a commit needs: on Blob Storage with the app's
    // identity, in a folder by a hard link (which some network file systems refuse). A file, not a folder: the location is
    // shared, and nothing of the check stays behind.
    const probe = `.tenant-integrations-doctor-${randomUUID()}`;
    if (!(await store.createIfAbsent(probe, '', { abortSignal: signal })))
      return {
        state: 'fail',
        found: `${store.description}: a new file was said to exist`,
        action: 'Give the delta sink a location of its own.',
      };
    await store.remove(probe, { abortSignal: signal });
    return { state: 'ok', found: `${store.description} takes the app’s commits` };
  },
};
