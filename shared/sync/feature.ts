import type { FeatureModule } from '../feature';
import { SYNC_ERRORS } from './errors';
import { SYNC_RUN } from './orchestration';
import { SYNC_SETTINGS } from './settings';

/** The scheduled sync (functions/sync.ts): its settings, codes and kind of run. */
export const SYNC_FEATURE: FeatureModule = {
  name: 'sync',
  settings: SYNC_SETTINGS,
  errors: SYNC_ERRORS,
  runs: SYNC_RUN,
};
