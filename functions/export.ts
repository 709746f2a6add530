import type { HttpRequest } from '@azure/functions';
import * as df from 'durable-functions';
import type { DurableClient } from 'durable-functions';
import { appContext, httpDoor } from '../shared/app';
import { EXPORT_PARTS } from '../shared/exports/feature';
import { createExport, exportStatus } from '../shared/exports/routes';
import { EXPORT, exportOrchestrator } from '../shared/exports/orchestration';
import {
  exportFailActivity,
  exportFinishActivity,
  exportNotifyActivity,
  exportStreamActivity,
} from '../shared/exports/activities';

/**
 * The export webhook (shared/exports/): its two routes, its orchestration and its four activities.
 *
 * POST /api/exports (function key): `{ streams?, format?, gzip?, callbackUrl? }` → 202 with Location,
 * Retry-After and `{ id, status, statusUrl }`; Idempotency-Key honoured for 24 h per caller; 429 when the tenant's
 * export slots are all busy.
 */
df.app.client.http('exportsCreate', {
  route: 'exports',
  methods: ['POST'],
  authLevel: 'function',
  handler: httpDoor('export', (request: HttpRequest, client: DurableClient) =>
    createExport(request, client, appContext().part(EXPORT_PARTS)),
  ),
});

/** GET /api/exports/{id} (function key): status and per-stream progress; 15-minute download links when done. */
df.app.client.http('exportsStatus', {
  route: 'exports/{id}',
  methods: ['GET'],
  authLevel: 'function',
  handler: httpDoor('export status', (request: HttpRequest, client: DurableClient) =>
    exportStatus(request, client, appContext().part(EXPORT_PARTS)),
  ),
});

/** One export: a file per stream, the manifest, the signed callback. */
df.app.orchestration(EXPORT.orchestrator, exportOrchestrator);

/** One stream of an export to its blob, streaming; the outcome (file or error) for the manifest. */
df.app.activity(EXPORT.stream, { handler: (input: unknown) => exportStreamActivity(appContext(), input) });

/** The export's manifest (when every stream succeeded), and its slot freed for the next export. */
df.app.activity(EXPORT.finish, { handler: (input: unknown) => exportFinishActivity(appContext(), input) });

/** An export that could not finish — its slot freed and its summary failed, with why. */
df.app.activity(EXPORT.fail, { handler: (input: unknown) => exportFailActivity(appContext(), input) });

/** The signed callback (links signed here and sent, never returned into the durable history). */
df.app.activity(EXPORT.notify, { handler: (input: unknown) => exportNotifyActivity(appContext(), input) });
