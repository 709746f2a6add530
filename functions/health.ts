import { app } from '@azure/functions';
import { appContext } from '../shared/app';

const { config, logger } = appContext();

/** GET /api/health: liveness plus what an operator needs at a glance (never a secret). */
app.http('health', {
  route: 'health',
  methods: ['GET'],
  authLevel: 'anonymous',
  handler: async () => {
    let delegatedSession = 'unknown';
    if (config.tenant) {
      try {
        delegatedSession = (await appContext().access().delegated.status())?.state ?? 'none';
      } catch (err) {
        logger.log('warn', 'health: session metadata unavailable', { reason: (err as Error).message });
      }
    }
    return {
      jsonBody: {
        status: delegatedSession === 'login-required' ? 'degraded' : 'ok',
        tenant: config.tenant?.name ?? null,
        tenantConfigured: config.tenant !== undefined,
        secretStore: config.keyVaultUrl ? 'key-vault' : 'local-file',
        delegatedSession,
      },
    };
  },
});
