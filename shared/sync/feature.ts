import { part, type FeatureModule } from '../feature';
import { SYNC_ERRORS } from './errors';
import { SYNC_RUN } from './orchestration';
import type { SyncParts } from './parts';
import { syncRunDetails } from './run-details';
import { SYNC_SETTINGS } from './settings';

/** The sync's parts (its catalog, state and sinks), asked for by its activities: built on first use. */
export const SYNC_PARTS = part<SyncParts>('sync', (host) =>
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use, not at registration
  (require('./parts') as typeof import('./parts')).syncParts(host.config, host.access(), {
    clock: host.clock,
    logger: host.logger,
  }),
);

/** The scheduled sync (functions/sync.ts): its settings, codes, kind of run and parts. */
export const SYNC_FEATURE: FeatureModule = {
  name: 'sync',
  settings: SYNC_SETTINGS,
  errors: SYNC_ERRORS,
  runs: { ...SYNC_RUN, details: syncRunDetails((config) => SYNC_RUN.schedule?.(config) ?? '') },
  parts: SYNC_PARTS,
  routes: [{ method: 'POST', route: 'manage/sync', path: 'manage/sync', key: 'master' }],
};
