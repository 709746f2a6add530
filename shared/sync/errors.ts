import { declareErrors } from '../errors';

/** The sync's codes: a run that failed, a start while one runs. */
export const SYNC_ERRORS = declareErrors({
  sync_failed: {
    title: 'Sync failed',
    action: 'See the stream’s error; the next run resumes from its checkpoint.',
  },
  sync_running: {
    title: 'A sync is running',
    action:
      'Start it again after the time Retry-After names, or once the running sync has ended in the run history (GET /api/manage/runs).',
    retryAfterSeconds: 10,
  },
});

declare module '../errors/codes' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type -- the codes above, added to the closed type
  interface FeatureErrorCodes extends Record<keyof typeof SYNC_ERRORS, true> {}
}
