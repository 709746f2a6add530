import type { HttpRequest } from '@azure/functions';
import * as df from 'durable-functions';
import type { DurableClient } from 'durable-functions';
import { appContext } from '../shared/app';
import { createImport } from '../shared/imports/http';
import { setupProblem, unlessUnavailable } from '../shared/net/accepted';

/**
 * POST /api/imports (function key): `{ operation, items: [{ key, variables }], callbackUrl? }` → 202 with
 * Location and `{ id, statusUri }`; 409 `admin_login_required` without an admin's session; Idempotency-Key honoured.
 */
df.app.client.http('importsCreate', {
  route: 'imports',
  methods: ['POST'],
  authLevel: 'function',
  handler: (request: HttpRequest, client: DurableClient) =>
    unlessUnavailable(
      () => appContext().imports(),
      (setup) => createImport(request, client, setup),
      'import',
      setupProblem('operations_invalid'),
    ),
});
