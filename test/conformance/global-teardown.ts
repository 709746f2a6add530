import { rmSync } from 'node:fs';
import { INFO_FILE, stopKeycloak } from './keycloak';

export default async function globalTeardown(): Promise<void> {
  const pid = (globalThis as { __keycloakPid?: number }).__keycloakPid;
  if (pid) stopKeycloak(pid);
  rmSync(INFO_FILE, { force: true });
}
