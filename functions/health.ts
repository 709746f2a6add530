import { app } from '@azure/functions';
import { healthReport } from '../shared/admin/health';
import { appContext, httpDoor } from '../shared/app';

/**
 * GET /api/health (anonymous, for probes): the status alone. Which tenant this is and the admin session's
 * state are for key holders (GET /api/manage/health).
 */
app.http('health', {
  route: 'health',
  methods: ['GET'],
  authLevel: 'anonymous',
  handler: httpDoor('health', async () => ({
    jsonBody: { status: (await healthReport(appContext())).status },
  })),
});
