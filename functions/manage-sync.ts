import type { HttpRequest } from '@azure/functions';
import * as df from 'durable-functions';
import type { DurableClient } from 'durable-functions';
import { appContext, httpDoor } from '../shared/app';
import { startSync } from '../shared/sync/start';

/** POST /api/manage/sync (admin key): start a sync now; 409 with the running one if one is running. */
df.app.client.http('manageSync', {
  route: 'manage/sync',
  methods: ['POST'],
  authLevel: 'admin',
  handler: httpDoor('sync', (_request: HttpRequest, client: DurableClient) =>
    startSync(client, appContext()),
  ),
});
