import type { FeatureModule } from '../feature';
import { DEVICE_LOGIN_ERRORS } from './errors';
import { LOGIN_RUN } from './orchestration';

/** The admins' device login (functions/device-login.ts): its codes and kind of run. */
export const DEVICE_LOGIN_FEATURE: FeatureModule = {
  name: 'device-login',
  errors: DEVICE_LOGIN_ERRORS,
  runs: LOGIN_RUN,
};
