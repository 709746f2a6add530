import type { HttpRequest } from '@azure/functions';
import * as df from 'durable-functions';
import type { DurableClient } from 'durable-functions';
import { appContext } from '../shared/app';
import { exportStatus } from '../shared/exports/http';
import { unlessUnavailable } from '../shared/net/accepted';

/** GET /api/exports/{id} (function key): status and per-stream progress; 15-minute download links when done. */
df.app.client.http('exportsStatus', {
  route: 'exports/{id}',
  methods: ['GET'],
  authLevel: 'function',
  handler: (request: HttpRequest, client: DurableClient) =>
    unlessUnavailable(
      () => appContext().exports(),
      (setup) => exportStatus(request, client, setup),
      'export',
    ),
});
