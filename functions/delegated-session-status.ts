import { app } from '@azure/functions';
import { sessionView } from '../shared/auth/delegated-session';
import { deviceLoginInstanceId } from '../shared/device-login/orchestration';
import { appContext } from '../shared/app';

/**
 * GET /api/manage/session (admin key): who is connected, since when, last and next refresh, state — and
 * the id of this tenant's device login, so the admin page can pick up one that is already running.
 */
app.http('delegatedSessionStatus', {
  route: 'manage/session',
  methods: ['GET'],
  authLevel: 'admin',
  handler: async () => {
    const access = appContext().access();
    const session = sessionView(await access.delegated.status());
    return { jsonBody: { ...session, loginId: deviceLoginInstanceId(access.tenant.name) } };
  },
});
