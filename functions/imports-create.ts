import type { HttpRequest } from '@azure/functions';
import * as df from 'durable-functions';
import type { DurableClient } from 'durable-functions';
import { appContext, httpDoor } from '../shared/app';
import { createImport } from '../shared/imports/http';

/**
 * POST /api/imports (function key): `{ operation, items: [{ key, variables }], callbackUrl? }` → 202 with
 * Location and `{ id, statusUri }`; 409 `admin_login_required` without an admin's session; Idempotency-Key honoured.
 */
df.app.client.http('importsCreate', {
  route: 'imports',
  methods: ['POST'],
  authLevel: 'function',
  handler: httpDoor('import', (request: HttpRequest, client: DurableClient) =>
    createImport(request, client, appContext().imports()),
  ),
});
