import type { Hasher } from '../personal/policy';
import { hashKeyOf } from '../secrets';
import type { AccessLayer } from '../access';
import { keptFor } from '../cache';
import type { Clock } from '../clock';
import { partOf, type AppConfig } from '../config';
import type { Logger } from '../log';
import { blobService, delegationService } from '../state/blob-service';
import { catalogStreams, type CatalogStore } from '../catalog';
import { CATALOG_SETTINGS } from '../catalog/settings';
import { EXPORT_SETTINGS } from './settings';
import type { StreamDefinition } from '../streams';
import { IdempotencyKeys, ledgerTable } from '../state/idempotency';
import { ExportSlots } from './ledger';
import type { ExportInput } from './orchestration';
import { ExportStorage } from './storage';

/** The export webhook's parts, built once per process from configuration. */
export interface ExportParts {
  tenant: string;
  /** Every stream of the tenant's catalog (SYNC_STREAMS_FILE, else the stored or discovered one); a request picks among them. */
  streams: () => Promise<StreamDefinition[]>;
  storage: ExportStorage;
  /** Idempotency-Keys, under the callers' scope. */
  keys: IdempotencyKeys;
  /** The tenant's running-export slots (EXPORTS_MAX_CONCURRENT). */
  slots: ExportSlots;
  maxConcurrent: number;
  /** ACTIVITY_SLICE_SECONDS: how long one stream activity writes before the next carries on. */
  sliceSeconds: number;
  development: boolean;
  /** The secret callers sign requests with, when EXPORTS_REQUEST_SECRET_NAME is set. */
  requestSecret?: () => Promise<string>;
  /** The secret callbacks are signed with (the downstream webhook secret). */
  callbackSecret: () => Promise<string>;
  clock: Clock;
  logger: Logger;
  /** The key personal fields are hashed with (SYNC_HASH_SECRET_NAME), asked for by a stream that hashes one. */
  hashKey: () => Promise<Hasher>;
  /** An export was accepted (its orchestration started): its run begins in the history and its trace. */
  accepted: (input: ExportInput) => Promise<void>;
}

const CATALOG_CACHE_MS = 60_000;

export function exportParts(
  config: AppConfig,
  access: Pick<AccessLayer, 'secrets' | 'sessionSecrets' | 'tenant' | 'graphql'>,
  options: {
    clock: Clock;
    logger: Logger;
    /** Where the tenant's catalog is kept (shared/state/catalog-store.ts): an export reads the sync's streams. */
    catalog: CatalogStore;
    accepted?: (input: ExportInput) => Promise<void>;
  },
): ExportParts {
  const settings = partOf(config, EXPORT_SETTINGS);
  const requestSecretName = settings.requestSecretName;
  let delegation: ReturnType<typeof delegationService> | undefined;
  // One read of the catalog serves every request for a minute: a burst of requests before the first sync would
  // otherwise each discover the tenant's schema (and a failed read is not kept).
  const streams = keptFor(CATALOG_CACHE_MS, options.clock, () =>
    catalogStreams({
      graphql: access.graphql,
      state: options.catalog,
      tenant: access.tenant.name,
      streamsFile: partOf(config, CATALOG_SETTINGS).streamsFile,
      maxStreams: partOf(config, CATALOG_SETTINGS).maxStreams,
      personal: partOf(config, CATALOG_SETTINGS).personal.chosen,
      now: () => options.clock.now(),
      logger: options.logger,
    }).then((c) => c.streams),
  );
  return {
    tenant: access.tenant.name,
    streams,
    storage: new ExportStorage(blobService(config), () => (delegation ??= delegationService(config))),
    keys: new IdempotencyKeys(ledgerTable(config, 'exports')),
    slots: new ExportSlots(ledgerTable(config, 'exports')),
    maxConcurrent: settings.maxConcurrent,
    sliceSeconds: config.activitySliceSeconds,
    development: config.development,
    requestSecret: requestSecretName ? () => access.secrets.get(requestSecretName) : undefined,
    callbackSecret: () => access.secrets.get(config.downstreamWebhookSecretName),
    clock: options.clock,
    logger: options.logger,
    hashKey: hashKeyOf(access.sessionSecrets, partOf(config, CATALOG_SETTINGS).personal.hashSecretName),
    accepted: options.accepted ?? (async () => undefined),
  };
}
