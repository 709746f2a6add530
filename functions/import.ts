import type { HttpRequest } from '@azure/functions';
import * as df from 'durable-functions';
import type { DurableClient } from 'durable-functions';
import { appContext, httpDoor } from '../shared/app';
import { IMPORT_PARTS } from '../shared/imports/feature';
import { createImport, importStatus } from '../shared/imports/routes';
import { IMPORT, importOrchestrator } from '../shared/imports/orchestration';
import {
  importApplyActivity,
  importFinishActivity,
  importNotifyActivity,
  importSessionActivity,
  importWaitingActivity,
} from '../shared/imports/activities';

/**
 * The import webhook, the write-back (shared/imports/): its two routes, its orchestration and its five activities.
 *
 * POST /api/imports (function key): `{ operation, items: [{ key, variables }], callbackUrl? }` → 202 with
 * Location and `{ id, status, statusUrl }`; 409 `admin_login_required` without an admin's session; Idempotency-Key
 * honoured.
 */
df.app.client.http('importsCreate', {
  route: 'imports',
  methods: ['POST'],
  authLevel: 'function',
  handler: httpDoor('import', (request: HttpRequest, client: DurableClient) =>
    createImport(request, client, appContext().part(IMPORT_PARTS)),
  ),
});

/** GET /api/imports/{id} (function key): the import's state, counts and a result per item. */
df.app.client.http('importsStatus', {
  route: 'imports/{id}',
  methods: ['GET'],
  authLevel: 'function',
  handler: httpDoor('import status', (request: HttpRequest, client: DurableClient) =>
    importStatus(request, client, appContext().part(IMPORT_PARTS)),
  ),
});

/** One import: items applied with the admin's session, a wait for one, the callback. */
df.app.orchestration(IMPORT.orchestrator, importOrchestrator);

/** A share of the import's items applied with the admin's session. */
df.app.activity(IMPORT.apply, { handler: (input: unknown) => importApplyActivity(appContext(), input) });

/** Whether an admin's session is there again (a waiting import's check). */
df.app.activity(IMPORT.session, { handler: (input: unknown) => importSessionActivity(appContext(), input) });

/** The import waits for an admin: the alert's record and the run history. */
df.app.activity(IMPORT.waiting, { handler: (input: unknown) => importWaitingActivity(appContext(), input) });

/** The import's end: items never sent skipped, the summary in the run history. */
df.app.activity(IMPORT.finish, { handler: (input: unknown) => importFinishActivity(appContext(), input) });

/** The import's signed callback. */
df.app.activity(IMPORT.notify, { handler: (input: unknown) => importNotifyActivity(appContext(), input) });
