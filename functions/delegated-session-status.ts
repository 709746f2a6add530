import { app } from '@azure/functions';
import { sessionView } from '../shared/auth/delegated-session';
import { deviceLoginInstanceId } from '../shared/device-login/orchestration';
import { appContext, httpDoor } from '../shared/app';

/** The mutations an admin's session lets imports run (null: imports are off; undefined: unknown here). */
async function importOperations(): Promise<string[] | null | undefined> {
  try {
    return [...(await appContext().imports().operations()).keys()];
  } catch (err) {
    return (err as { code?: unknown }).code === 'imports_disabled' ? null : undefined;
  }
}

/**
 * GET /api/manage/session (admin key): who is connected, since when, last and next refresh, state — the id of
 * this tenant's device login, so the admin page can pick up one that is already running — and which import
 * operations the session lets run.
 */
app.http('delegatedSessionStatus', {
  route: 'manage/session',
  methods: ['GET'],
  authLevel: 'admin',
  handler: httpDoor('session status', async () => {
    const access = appContext().access();
    const session = sessionView(await access.delegated.status());
    return {
      jsonBody: {
        ...session,
        loginId: deviceLoginInstanceId(access.tenant.name),
        importOperations: await importOperations(),
      },
    };
  }),
});
