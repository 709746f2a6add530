import { declareErrors } from '../errors';

/** The device login's codes: one running, and how one ended. */
export const DEVICE_LOGIN_ERRORS = declareErrors({
  device_login_running: {
    title: 'A device login is running',
    action:
      'Finish or cancel the running login, start with ?force=true to replace it, or try again after the time Retry-After names (when its code expires).',
    retryAfterSeconds: 5,
  },
  device_login_denied: {
    title: 'Device login denied',
    action: 'The person declined on the identity provider’s page: start a new login and approve it.',
  },
  device_login_expired: {
    title: 'Device login expired',
    action: 'No one signed in within the code’s lifetime (10 minutes): start a new login and sign in sooner.',
  },
  device_login_failed: {
    title: 'Device login failed',
    action:
      'The identity provider refused the login (see the message): check TENANT_AUTH_URL and start a new login.',
  },
  device_login_cancelled: {
    title: 'Device login cancelled',
    action: 'Start a new device login when you are ready.',
  },
});

declare module '../errors/codes' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type -- the codes above, added to the closed type
  interface FeatureErrorCodes extends Record<keyof typeof DEVICE_LOGIN_ERRORS, true> {}
}
