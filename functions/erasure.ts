import { app } from '@azure/functions';
import { appContext, httpDoor } from '../shared/app';
import { eraseRoute } from '../shared/erasure/route';

/**
 * POST /api/manage/erasures (admin key) `{stream, key, by}`: one record out of every sink of SYNC_SINKS — its current
 * row and every change of it — and the erasure in the run history (shared/erasure/).
 */
app.http('manageErase', {
  route: 'manage/erasures',
  methods: ['POST'],
  authLevel: 'admin',
  handler: httpDoor('erase', (request) => eraseRoute(request, appContext())),
});
