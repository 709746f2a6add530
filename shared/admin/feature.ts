import type { FeatureModule } from '../feature';

/**
 * The admin surface (functions/admin.ts): the pages, the run history's routes, doctor's. It has no settings, codes
 * or runs of its own: it shows the other features' (the run history, their checks).
 */
export const ADMIN_FEATURE: FeatureModule = { name: 'admin' };
