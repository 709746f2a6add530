import * as df from 'durable-functions';
import { DEVICE_LOGIN, deviceLoginOrchestrator } from '../shared/device-login/orchestration';

/** The device login (shared/device-login/orchestration.ts): the device-flow poll loop on durable timers. */
df.app.orchestration(DEVICE_LOGIN.orchestrator, deviceLoginOrchestrator);
