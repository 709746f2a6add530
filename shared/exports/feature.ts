import type { FeatureModule } from '../feature';
import { EXPORT_ERRORS } from './errors';
import { EXPORT_RUN } from './orchestration';
import { EXPORT_SETTINGS } from './settings';

/** The on-demand export webhook (functions/export.ts): its settings, codes and kind of run. */
export const EXPORT_FEATURE: FeatureModule = {
  name: 'exports',
  settings: EXPORT_SETTINGS,
  errors: EXPORT_ERRORS,
  runs: EXPORT_RUN,
};
