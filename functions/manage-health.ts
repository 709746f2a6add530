import { app } from '@azure/functions';
import { healthReport } from '../shared/admin/health';
import { appContext, httpDoor } from '../shared/app';

/** GET /api/manage/health (admin key): the health with its details — tenant, secret store, session state. */
app.http('manageHealth', {
  route: 'manage/health',
  methods: ['GET'],
  authLevel: 'admin',
  handler: httpDoor('health', async () => ({ jsonBody: await healthReport(appContext()) })),
});
