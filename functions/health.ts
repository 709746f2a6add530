import { app } from '@azure/functions';
import { appContext } from '../shared/app';

const { config } = appContext();

/** GET /api/health: liveness plus what an operator needs at a glance; no secrets. */
app.http('health', {
  route: 'health',
  methods: ['GET'],
  authLevel: 'anonymous',
  handler: async () => ({
    jsonBody: {
      status: 'ok',
      tenant: config.tenant?.name ?? null,
      tenantConfigured: config.tenant !== undefined,
      secretStore: config.keyVaultUrl ? 'key-vault' : 'local-file',
    },
  }),
});
