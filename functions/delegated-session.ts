import { app } from '@azure/functions';
import { appContext, httpDoor } from '../shared/app';
import { IMPORT_PARTS } from '../shared/imports/feature';
import { KEEPER_SCHEDULE, keeperShouldRefresh, sessionView } from '../shared/auth/delegated-session';
import { appClock } from '../shared/clock';
import { deviceLoginInstanceId } from '../shared/device-login/orchestration';
import { IntegrationError } from '../shared/errors';

/**
 * The admin's delegated session (shared/auth/delegated-session.ts): the timer that keeps it alive and its status.
 *
 * The keeper refreshes it well inside the 30-minute idle window and stores each new refresh token. A failed
 * refresh marks the session login-required (admin page, /api/health).
 */
app.timer('delegatedSessionKeeper', {
  schedule: KEEPER_SCHEDULE,
  runOnStartup: false,
  handler: async (_timer, context) => {
    const { delegated } = appContext().access();
    if (!keeperShouldRefresh(await delegated.status(), appClock.now())) return;
    try {
      await delegated.refresh();
      context.log('delegated session refreshed');
    } catch (err) {
      context.warn(
        `delegated session refresh failed: ${err instanceof IntegrationError ? err.code : 'error'}`,
      );
    }
  },
});

/** The mutations an admin's session lets imports run (null: imports are off; undefined: unknown here). */
async function importOperations(): Promise<string[] | null | undefined> {
  try {
    return [...(await appContext().part(IMPORT_PARTS).operations()).keys()];
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
