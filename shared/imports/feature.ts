import type { FeatureModule } from '../feature';
import { importOperationsCheck } from './doctor';
import { IMPORT_ERRORS } from './errors';
import { IMPORT_RUN } from './orchestration';
import { IMPORT_SETTINGS } from './settings';

/** The write-back (functions/import.ts): its settings, codes, kind of run and its doctor check. */
export const IMPORT_FEATURE: FeatureModule = {
  name: 'imports',
  settings: IMPORT_SETTINGS,
  errors: IMPORT_ERRORS,
  runs: IMPORT_RUN,
  doctor: [importOperationsCheck],
};
