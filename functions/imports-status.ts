import type { HttpRequest } from '@azure/functions';
import * as df from 'durable-functions';
import type { DurableClient } from 'durable-functions';
import { appContext, httpDoor } from '../shared/app';
import { importStatus } from '../shared/imports/http';

/** GET /api/imports/{id} (function key): the import's state, counts and a result per item. */
df.app.client.http('importsStatus', {
  route: 'imports/{id}',
  methods: ['GET'],
  authLevel: 'function',
  handler: httpDoor('import status', (request: HttpRequest, client: DurableClient) =>
    importStatus(request, client, appContext().imports()),
  ),
});
