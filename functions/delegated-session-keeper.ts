import { app } from '@azure/functions';
import { KEEPER_SCHEDULE, keeperShouldRefresh } from '../shared/auth/delegated-session';
import { appContext } from '../shared/app';
import { IntegrationError } from '../shared/errors';
import { appClock } from '../shared/clock';

/**
 * Keeps the delegated session alive: refreshes it well inside the 30-minute idle window and stores each
 * new refresh token. A failed refresh marks the session login-required (admin page, /api/health).
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
