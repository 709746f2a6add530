import { declareErrors } from '../shared/errors';

/** The local host's own routes (the durable task API, /admin/…), as `npm start` serves them. */
export const LOCAL_HOST_ERRORS = declareErrors({
  instance_running: {
    title: 'The orchestration instance is running',
    action: 'Wait for it to end (GET its status), or terminate it first.',
    retryAfterSeconds: 1,
  },
  instance_ended: {
    title: 'The orchestration instance has ended',
    action: 'Start a new instance; an ended one takes no more events.',
  },
  timer_running: {
    title: 'The timer is running',
    action: 'Wait for its run to end (GET /admin/host/status), then fire it again.',
    retryAfterSeconds: 1,
  },
});

declare module '../shared/errors/codes' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type -- the codes above, added to the closed type
  interface FeatureErrorCodes extends Record<keyof typeof LOCAL_HOST_ERRORS, true> {}
}
