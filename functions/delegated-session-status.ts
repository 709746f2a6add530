import { app } from '@azure/functions';
import { sessionView } from '../shared/auth/delegated-session';
import { appContext } from '../shared/app';

/** GET /api/manage/session (admin key): who is connected, since when, last and next refresh, state. */
app.http('delegatedSessionStatus', {
  route: 'manage/session',
  methods: ['GET'],
  authLevel: 'admin',
  handler: async () => ({ jsonBody: sessionView(await appContext().access().delegated.status()) }),
});
