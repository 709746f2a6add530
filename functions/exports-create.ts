import type { HttpRequest } from '@azure/functions';
import * as df from 'durable-functions';
import type { DurableClient } from 'durable-functions';
import { appContext, httpDoor } from '../shared/app';
import { createExport } from '../shared/exports/http';

/**
 * POST /api/exports (function key): `{ streams?, format?, gzip?, callbackUrl? }` → 202 with Location,
 * Retry-After and `{ id, status }`; Idempotency-Key honoured for 24 h per caller; 429 when the tenant's
 * export slots are all busy.
 */
df.app.client.http('exportsCreate', {
  route: 'exports',
  methods: ['POST'],
  authLevel: 'function',
  handler: httpDoor('export', (request: HttpRequest, client: DurableClient) =>
    createExport(request, client, appContext().exports()),
  ),
});
