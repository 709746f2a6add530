import type { HttpRequest } from '@azure/functions';
import * as df from 'durable-functions';
import type { DurableClient } from 'durable-functions';
import { appContext } from '../shared/app';
import { importStatus } from '../shared/imports/http';
import { setupProblem, unlessUnavailable } from '../shared/net/accepted';

/** GET /api/imports/{id} (function key): the import's state, counts and a result per item. */
df.app.client.http('importsStatus', {
  route: 'imports/{id}',
  methods: ['GET'],
  authLevel: 'function',
  handler: (request: HttpRequest, client: DurableClient) =>
    unlessUnavailable(
      () => appContext().imports(),
      (setup) => importStatus(request, client, setup),
      'import',
      setupProblem('operations_invalid'),
    ),
});
