import { app } from '@azure/functions';
import { appContext, httpDoor } from '../shared/app';
import { listRuns } from '../shared/admin/runs';

/** GET /api/manage/runs (admin key): run summaries, newest first, paged with `before`. */
app.http('manageRuns', {
  route: 'manage/runs',
  methods: ['GET'],
  authLevel: 'admin',
  handler: httpDoor('runs', (request) => listRuns(request, appContext())),
});
