import { app } from '@azure/functions';
import { healthReport } from '../shared/admin/health';
import { ADMIN_PAGE } from '../shared/admin/page';
import { getRun, listRuns } from '../shared/admin/runs';
import { statusPage } from '../shared/admin/status-page';
import { statusView } from '../shared/admin/status';
import { STATUS_PAGE_CSP } from '../shared/admin/status-page';
import { appContext, FEATURE_CHECKS, httpDoor } from '../shared/app';
import { doctorFailed, runDoctor } from '../shared/doctor';

/**
 * The admin surface (shared/admin/): the health probe, and behind the admin key the admin and status pages, the
 * run history and doctor.
 *
 * GET /api/health (anonymous, for probes): the status alone. Which tenant this is and the admin session's state
 * are for key holders (GET /api/manage/health).
 */
app.http('health', {
  route: 'health',
  methods: ['GET'],
  authLevel: 'anonymous',
  handler: httpDoor('health', async () => ({
    jsonBody: { status: (await healthReport(appContext())).status },
  })),
});

/** GET /api/manage/health (admin key): the health with its details — tenant, secret store, session state. */
app.http('manageHealth', {
  route: 'manage/health',
  methods: ['GET'],
  authLevel: 'admin',
  handler: httpDoor('health', async () => ({ jsonBody: await healthReport(appContext()) })),
});

/** GET /api/manage (admin key): the admin page. */
app.http('managePage', {
  route: 'manage',
  methods: ['GET'],
  authLevel: 'admin',
  handler: httpDoor('admin page', async () => ({
    body: ADMIN_PAGE,
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-store',
      // The page's key is in its URL: keep it out of Referer headers to the login link.
      'referrer-policy': 'no-referrer',
      'content-security-policy':
        "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'",
    },
  })),
});

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

/** GET /api/manage/runs (admin key): run summaries, newest first, paged with `before`. */
app.http('manageRuns', {
  route: 'manage/runs',
  methods: ['GET'],
  authLevel: 'admin',
  handler: httpDoor('runs', (request) => listRuns(request, appContext())),
});

/** GET /api/manage/runs/{id} (admin key): one run's summary. */
app.http('manageRun', {
  route: 'manage/runs/{id}',
  methods: ['GET'],
  authLevel: 'admin',
  handler: httpDoor('run', (request) => getRun(request.params.id, appContext())),
});

/** GET /api/manage/doctor (admin key): the set-up checks, run with the app's own identity and settings. */
app.http('manageDoctor', {
  route: 'manage/doctor',
  methods: ['GET'],
  authLevel: 'admin',
  handler: httpDoor('doctor', async () => {
    const ctx = appContext();
    const checks = await runDoctor(ctx.config, ctx.access(), { checks: FEATURE_CHECKS });
    return { jsonBody: { ok: !doctorFailed(checks), checks }, headers: { 'cache-control': 'no-store' } };
  }),
});
