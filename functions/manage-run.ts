import { app } from '@azure/functions';
import { appContext, httpDoor } from '../shared/app';
import { getRun } from '../shared/admin/runs';

/** GET /api/manage/runs/{id} (admin key): one run's summary. */
app.http('manageRun', {
  route: 'manage/runs/{id}',
  methods: ['GET'],
  authLevel: 'admin',
  handler: httpDoor('run', (request) => getRun(request.params.id, appContext())),
});
