import { app } from '@azure/functions';
import { appContext, httpDoor } from '../shared/app';
import { doctorFailed, runDoctor } from '../shared/doctor/checks';

/** GET /api/manage/doctor (admin key): the set-up checks, run with the app's own identity and settings. */
app.http('manageDoctor', {
  route: 'manage/doctor',
  methods: ['GET'],
  authLevel: 'admin',
  handler: httpDoor('doctor', async () => {
    const ctx = appContext();
    const checks = await runDoctor(ctx.config, ctx.access());
    return { jsonBody: { ok: !doctorFailed(checks), checks }, headers: { 'cache-control': 'no-store' } };
  }),
});
