import type { HttpRequest } from '@azure/functions';
import * as df from 'durable-functions';
import type { DurableClient } from 'durable-functions';
import { appContext, httpDoor } from '../shared/app';
import { exportStatus } from '../shared/exports/http';

/** GET /api/exports/{id} (function key): status and per-stream progress; 15-minute download links when done. */
df.app.client.http('exportsStatus', {
  route: 'exports/{id}',
  methods: ['GET'],
  authLevel: 'function',
  handler: httpDoor('export status', (request: HttpRequest, client: DurableClient) =>
    exportStatus(request, client, appContext().exports()),
  ),
});
