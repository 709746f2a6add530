import type { FeatureModule } from '../feature';
import { DEVICE_LOGIN_ERRORS } from './errors';
import { LOGIN_RUN } from './orchestration';

/** The admins' device login (functions/device-login.ts, delegated-session.ts): its codes, kind of run and routes. */
export const DEVICE_LOGIN_FEATURE: FeatureModule = {
  name: 'device-login',
  errors: DEVICE_LOGIN_ERRORS,
  runs: LOGIN_RUN,
  routes: [
    { method: 'POST', route: 'manage/device-login', path: 'manage/device-login', key: 'master' },
    {
      method: 'GET',
      route: 'manage/device-login/{id}',
      path: 'manage/device-login/login-acme',
      key: 'master',
    },
    {
      method: 'POST',
      route: 'manage/device-login/{id}/cancel',
      path: 'manage/device-login/login-acme/cancel',
      key: 'master',
    },
    // The delegated session the login keeps (functions/delegated-session.ts).
    { method: 'GET', route: 'manage/session', path: 'manage/session', key: 'master' },
  ],
};
