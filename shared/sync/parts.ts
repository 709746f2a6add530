import type { AccessLayer } from '../access';
import { type Clock, systemClock } from '../clock';
import type { AppConfig } from '../config';
import type { Logger } from '../log';
import { createSink, tracedSink } from '../sinks';
import { runCatalog, type RunCatalog } from '../catalog';
import type { TenantGraphqlClient } from '../graphql/client';
import type { SyncContext } from './run-steps';
import { partOf } from '../config';
import { hashKeyOf } from '../secrets';
import { CATALOG_SETTINGS } from '../catalog/settings';
import { catalogStore } from '../state/catalog-store';
import { SYNC_SETTINGS } from './settings';
import { syncStateStore } from './state-store';

export interface SyncParts {
  /** Tenant, state, sinks, clock and logger: what every sync step is given. */
  context: SyncContext;
  /** A new run's streams: the tenant's catalog held against its schema now (shared/catalog/). */
  catalog: (graphql: TenantGraphqlClient) => Promise<RunCatalog>;
  /** Streams read at once. */
  concurrency: number;
}

export const SYNC_CONCURRENCY = 3;

/**
 * The sync's parts from configuration: its catalog (SYNC_STREAMS_FILE, else the stored or discovered one,
 * narrowed by SYNC_STREAMS), state in Blob Storage when there is storage (the local state folder otherwise), and SYNC_SINKS (already checked when the configuration was read). Any bad setting fails here, naming it.
 */
export function syncParts(
  config: AppConfig,
  access: Pick<AccessLayer, 'secrets' | 'sessionSecrets' | 'tenant'>,
  options: { clock?: Clock; logger?: Logger } = {},
): SyncParts {
  const state = syncStateStore(config);
  const catalog = partOf(config, CATALOG_SETTINGS);
  return {
    catalog: (graphql) =>
      runCatalog({
        graphql,
        state: catalogStore(config),
        tenant: access.tenant.name,
        streamsFile: catalog.streamsFile,
        select: catalog.streams,
        schemaChanges: catalog.schemaChanges,
        maxStreams: catalog.maxStreams,
        personal: catalog.personal.chosen,
        now: () => (options.clock ?? systemClock).now(),
        logger: options.logger,
      }),
    context: {
      tenant: access.tenant.name,
      state,
      sink: tracedSink(
        createSink(config.sinkSpecs, { config, secrets: access.secrets, clock: options.clock }),
      ),
      clock: options.clock,
      logger: options.logger,
      passes: partOf(config, SYNC_SETTINGS).passes,
      hashKey: hashKeyOf(access.sessionSecrets, catalog.personal.hashSecretName),
    },
    concurrency: SYNC_CONCURRENCY,
  };
}
