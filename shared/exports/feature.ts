/* eslint-disable @typescript-eslint/no-require-imports -- the parts load on first use, not at registration */
import { part, type FeatureModule } from '../feature';
import { EXPORT_RUN_DETAILS } from './run-details';
import { EXPORT_ERRORS } from './errors';
import { EXPORT_RUN } from './orchestration';
import type { ExportParts } from './parts';
import { EXPORT_SETTINGS } from './settings';

/** The export's parts (its catalog, storage, keys and slots), asked for by its routes and activities. */
export const EXPORT_PARTS = part<ExportParts>('exports', (host) => {
  const { exportParts } = require('./parts') as typeof import('./parts');
  const { exportSummary } = require('./summary') as typeof import('./summary');
  const { catalogStore } = require('../state/catalog-store') as typeof import('../state/catalog-store');
  return exportParts(host.config, host.access(), {
    clock: host.clock,
    logger: host.logger,
    // The tenant's catalog: an export reads the streams the sync reads.
    catalog: catalogStore(host.config),
    // The run begins in the history (as running) and in its trace as soon as the export is accepted.
    accepted: (input) =>
      host.traced(
        'export accepted',
        { runId: input.id, tenant: input.tenant, count: input.streams.length },
        () => host.runs().save(exportSummary(input, [])),
      ),
  });
});

const UUID = '0f8fad5b-d9cb-469f-a165-70867728950e';

/** The on-demand export webhook (functions/export.ts): its settings, codes, kind of run, parts and routes. */
export const EXPORT_FEATURE: FeatureModule = {
  name: 'exports',
  settings: EXPORT_SETTINGS,
  errors: EXPORT_ERRORS,
  runs: { ...EXPORT_RUN, details: EXPORT_RUN_DETAILS },
  parts: EXPORT_PARTS,
  routes: [
    {
      method: 'POST',
      route: 'exports',
      path: 'exports',
      body: { streams: ['controls'], format: 'ndjson' },
      key: 'function',
    },
    // Ids as the app issues them (UUIDs): an id that is not one is refused before anything is read.
    { method: 'GET', route: 'exports/{id}', path: `exports/${UUID}`, key: 'function' },
  ],
};
