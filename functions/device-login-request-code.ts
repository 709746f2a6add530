import * as df from 'durable-functions';
import { requestDeviceCode } from '../shared/auth/device-http';
import { DEVICE_LOGIN, keepDeviceCode, type DeviceCodeTicket } from '../shared/auth/device-login';
import { tenantEndpoints } from '../shared/auth/endpoints';
import { appContext } from '../shared/app';

/**
 * Activity: seed §4.1, `client_id=portal`, `scope=openid`. The device code goes to the session secret store;
 * the orchestration (and so its history) gets a ticket with a handle instead.
 */
df.app.activity(DEVICE_LOGIN.requestCode, {
  handler: async (): Promise<DeviceCodeTicket> => {
    const access = appContext().access();
    return keepDeviceCode(access.sessionSecrets, await requestDeviceCode(tenantEndpoints(access.tenant)));
  },
});
