import * as df from 'durable-functions';
import { requestDeviceCode } from '../shared/auth/device-http';
import { DEVICE_LOGIN } from '../shared/auth/device-login';
import { tenantEndpoints } from '../shared/auth/endpoints';
import { appContext } from '../shared/app';

/** Activity: seed §4.1, `client_id=portal`, `scope=openid`. */
df.app.activity(DEVICE_LOGIN.requestCode, {
  handler: async () => requestDeviceCode(tenantEndpoints(appContext().access().tenant)),
});
