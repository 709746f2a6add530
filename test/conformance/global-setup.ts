import { writeFileSync } from 'node:fs';
import { INFO_FILE, startKeycloak } from './keycloak';

/** One Keycloak for the whole conformance run (it takes tens of seconds to boot on two cores). */
export default async function globalSetup(): Promise<void> {
  const { info, child } = await startKeycloak();
  (globalThis as { __keycloakPid?: number }).__keycloakPid = child.pid;
  writeFileSync(INFO_FILE, JSON.stringify(info), { mode: 0o600 });
  process.stderr.write(`\nconformance: Keycloak ready at ${info.url} after ${info.bootSeconds} s\n`);
}
