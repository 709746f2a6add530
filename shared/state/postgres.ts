import { Pool } from 'pg';
import type { AppConfig } from '../config';
import { SecretNotFound } from '../errors';
import { azureCredential } from '../secrets';

/** Microsoft Entra tokens for Azure Database for PostgreSQL (flexible server). */
export const POSTGRES_ENTRA_SCOPE = 'https://ossrdbms-aad.database.windows.net/.default';

/**
 * A small pool to the postgres sink's server. With `POSTGRES_HOST` the password is an Entra token for the app's
 * managed identity, asked for on every new connection (so it is fresh: tokens last about an hour) over TLS; with
 * `POSTGRES_URL` it is the secret-store entry, when there is one (trust or peer auth needs none).
 */
export function postgresPool(
  config: Pick<AppConfig, 'postgres' | 'azureClientId'>,
  secrets: { get(name: string): Promise<string> },
): Pool {
  const pg = config.postgres;
  if (!pg) throw new Error('postgres is not configured');
  if (pg.host) {
    const credential = azureCredential(config);
    return new Pool({
      host: pg.host,
      port: 5432,
      database: pg.database,
      user: pg.user,
      ssl: { rejectUnauthorized: true },
      max: 4,
      connectionTimeoutMillis: 15_000,
      password: async () => {
        const token = await credential.getToken(POSTGRES_ENTRA_SCOPE);
        if (!token)
          throw new Error(`no Microsoft Entra token for ${POSTGRES_ENTRA_SCOPE}: check AZURE_CLIENT_ID`);
        return token.token;
      },
    });
  }
  return new Pool({
    connectionString: pg.url,
    max: 4,
    connectionTimeoutMillis: 15_000,
    password: async () => {
      try {
        return await secrets.get(pg.passwordSecretName);
      } catch (err) {
        if (err instanceof SecretNotFound) return '';
        throw err;
      }
    },
  });
}
