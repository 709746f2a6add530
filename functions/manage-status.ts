import { app } from '@azure/functions';
import { appContext, httpDoor } from '../shared/app';
import { statusPage } from '../shared/admin/status-page';
import { statusView } from '../shared/admin/status';
import { STATUS_PAGE_CSP } from '../shared/admin/sync-now';

/** GET /api/manage/status (admin key): health at a glance, charts of the recent runs, and their details. */
app.http('manageStatus', {
  route: 'manage/status',
  methods: ['GET'],
  authLevel: 'admin',
  handler: httpDoor('status page', async (request) => {
    const code = request.query.get('code');
    const admin = code ? `../manage?code=${encodeURIComponent(code)}` : '../manage';
    return {
      body: statusPage(await statusView(appContext(), admin)),
      headers: {
        'content-type': 'text/html; charset=utf-8',
        'cache-control': 'no-store',
        'referrer-policy': 'no-referrer',
        // One script, by its hash (the Sync now button); the charts are SVG drawn on the server.
        'content-security-policy': STATUS_PAGE_CSP,
      },
    };
  }),
});
