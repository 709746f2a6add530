import type { FeatureModule } from '../feature';
import { ERASE_RUN } from './run';

/**
 * Erasure (functions/erasure.ts, `tenant-integrations erase`): one person's record taken out of the sinks on request,
 * each erasure a run in the history (docs/personal-data.md).
 */
export const ERASURE_FEATURE: FeatureModule = {
  name: 'erasure',
  runs: ERASE_RUN,
  routes: [
    {
      method: 'POST',
      route: 'manage/erasures',
      path: 'manage/erasures',
      body: { stream: 'users', key: 'user-0000001', by: 'fault suite' },
      key: 'master',
    },
  ],
};
