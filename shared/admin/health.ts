import type { Host } from '../feature';

export interface HealthReport {
  status: 'ok' | 'degraded';
  tenant: string | null;
  tenantConfigured: boolean;
  secretStore: 'key-vault' | 'local-file';
  delegatedSession: string;
}

/** What an operator needs at a glance (never a secret). Anonymous callers get `status` alone. */
/** What the health report reads: the access layer, the configuration, and the logger for what it cannot read. */
export type HealthHost = Pick<Host, 'access' | 'config' | 'logger'>;

export async function healthReport(app: HealthHost): Promise<HealthReport> {
  const { config, logger } = app;
  let delegatedSession = 'unknown';
  if (config.tenant) {
    try {
      delegatedSession = (await app.access().delegated.status())?.state ?? 'none';
    } catch (err) {
      logger.log('warn', 'health: session metadata unavailable', { reason: (err as Error).message });
    }
  }
  return {
    status: delegatedSession === 'login-required' ? 'degraded' : 'ok',
    tenant: config.tenant?.name ?? null,
    tenantConfigured: config.tenant !== undefined,
    secretStore: config.keyVaultUrl ? 'key-vault' : 'local-file',
    delegatedSession,
  };
}
