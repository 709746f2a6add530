import type { FeatureModule } from '../feature';

/**
 * The admin surface (functions/admin.ts): the pages, the run history's routes, doctor's. It has no settings, codes
 * or runs of its own: it shows the other features' (the run history, their checks).
 */
export const ADMIN_FEATURE: FeatureModule = {
  name: 'admin',
  routes: [
    { method: 'GET', route: 'health', path: 'health', key: null },
    { method: 'GET', route: 'manage', path: 'manage', key: 'master' },
    { method: 'GET', route: 'manage/health', path: 'manage/health', key: 'master' },
    { method: 'GET', route: 'manage/status', path: 'manage/status', key: 'master' },
    { method: 'GET', route: 'manage/doctor', path: 'manage/doctor', key: 'master' },
    { method: 'GET', route: 'manage/runs', path: 'manage/runs', key: 'master' },
    { method: 'GET', route: 'manage/runs/{id}', path: 'manage/runs/sync-1', key: 'master' },
  ],
};
