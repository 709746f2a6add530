/* eslint-disable @typescript-eslint/no-require-imports -- the parts load on first use, not at registration */
import { part, type FeatureModule } from '../feature';
import { IMPORT_RUN_DETAILS } from './run-details';
import { importOperationsCheck } from './doctor';
import { IMPORT_ERRORS } from './errors';
import { IMPORT_RUN } from './orchestration';
import type { ImportParts } from './parts';
import { IMPORT_SETTINGS } from './settings';

/** The import's parts (its allow-list, store, keys and the admin's session), asked for by its routes and activities. */
export const IMPORT_PARTS = part<ImportParts>('imports', (host) => {
  const { importParts } = require('./parts') as typeof import('./parts');
  const { importSummary } = require('./summary') as typeof import('./summary');
  return importParts(host.config, host.access(), {
    clock: host.clock,
    logger: host.logger,
    // The run begins in the history (as running, every item pending) and in its trace as soon as it is accepted.
    accepted: (input) =>
      host.traced('import accepted', { runId: input.id, tenant: input.tenant, count: input.total }, () =>
        host.runs().save(
          importSummary(input, {
            applied: 0,
            failed: 0,
            outcome_unknown: 0,
            skipped: 0,
            pending: input.total,
          }),
        ),
      ),
  });
});

const UUID = '0f8fad5b-d9cb-469f-a165-70867728950e';

/** The write-back (functions/import.ts): its settings, codes, kind of run, doctor check, parts and routes. */
export const IMPORT_FEATURE: FeatureModule = {
  name: 'imports',
  settings: IMPORT_SETTINGS,
  errors: IMPORT_ERRORS,
  runs: { ...IMPORT_RUN, details: IMPORT_RUN_DETAILS },
  doctor: [importOperationsCheck],
  parts: IMPORT_PARTS,
  routes: [
    {
      method: 'POST',
      route: 'imports',
      path: 'imports',
      body: {
        operation: 'updateKpi',
        items: [{ key: 'a', variables: { id: 'kpi-0000001', input: { value: 1 } } }],
      },
      key: 'function',
    },
    { method: 'GET', route: 'imports/{id}', path: `imports/${UUID}`, key: 'function' },
  ],
};
