import { readFileSync } from 'node:fs';
import type { Pool } from 'pg';
import type { AppConfig } from '../../config';
import { IntegrationError, SecretNotFound } from '../../errors';
import { azureCredential } from '../../secrets/credential';
import { postgresSettings } from './settings';

/** Microsoft Entra tokens for Azure Database for PostgreSQL (flexible server). */
export const POSTGRES_ENTRA_SCOPE = 'https://ossrdbms-aad.database.windows.net/.default';

/**
 * A small pool to the postgres sink's server. With `POSTGRES_HOST` the password is an Entra token for the app's
 * managed identity, asked for on every new connection (so it is fresh: tokens last about an hour) over TLS; with
 * `POSTGRES_URL` it is the secret-store entry, when there is one (trust or peer auth needs none).
 */
export function postgresPool(
  config: Pick<AppConfig, 'sinks' | 'azureClientId'>,
  secrets: { get(name: string): Promise<string> },
): Pool {
  const pg = postgresSettings(config);
  if (!pg) throw new Error('postgres is not configured');
  // The driver loads here, on first use: only a postgres sink pays for it.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { Pool, Client: PgClient } = require('pg') as typeof import('pg');
  // When the password callback fails (no secret, no token) the driver reports it but leaves the socket open, and
  // the server holds it until its authentication_timeout (a minute by default) — a CLI command waited that long to
  // exit. A client that failed to connect is ended here.
  class Client extends PgClient {
    override connect(): Promise<Client>;
    override connect(callback: ((err: Error) => void) | ((err: null, c: Client) => void)): void;
    override connect(
      callback?: ((err: Error) => void) | ((err: null, c: Client) => void),
    ): Promise<Client> | void {
      const ended = (err: Error) => {
        this.end().catch(() => undefined);
        return err;
      };
      if (!callback)
        return super.connect().then(
          () => this,
          (err: Error) => {
            throw ended(err);
          },
        );
      super.connect((err: Error | null) =>
        err
          ? (callback as (err: Error) => void)(ended(err))
          : (callback as (e: null, c: Client) => void)(null, this),
      );
    }
  }
  if (pg.host) {
    const credential = azureCredential(config);
    return new Pool({
      host: pg.host,
      port: 5432,
      database: pg.database,
      user: pg.user,
      ssl: { rejectUnauthorized: true },
      Client,
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
  // Read from the URL field by field, never handed to the driver as a connection string: the driver's parser turns
  // a URL without a password into an empty one, which would replace the secret-store lookup below.
  const target = postgresTarget(pg.url as string);
  return new Pool({
    ...target,
    Client,
    max: 4,
    connectionTimeoutMillis: 15_000,
    // Only asked for when the server wants a password; from the secret store, never from configuration.
    password: async () => {
      try {
        return await secrets.get(pg.passwordSecretName);
      } catch (err) {
        if (err instanceof SecretNotFound)
          throw new IntegrationError(
            'secret_not_found',
            `PostgreSQL at ${target.host}:${target.port} asked for a password and secret "${pg.passwordSecretName}" is not in the secret store: set it with \`tenant-integrations secrets set ${pg.passwordSecretName}\` (POSTGRES_PASSWORD_SECRET_NAME names another).`,
            { cause: err },
          );
        throw err;
      }
    },
  });
}

/**
 * Where POSTGRES_URL points and how to reach it: host, port, database and user, and TLS from `sslmode` —
 * `verify-full` checks the server's certificate and name (against `sslrootcert` when given, else the system's CAs),
 * `require` encrypts only. The configuration allows anything less than `verify-full` only on loopback.
 */
export function postgresTarget(url: string) {
  const u = new URL(url);
  const sslmode = u.searchParams.get('sslmode') ?? 'disable';
  const rootcert = u.searchParams.get('sslrootcert');
  const host = u.hostname.replace(/^\[|\]$/g, '');
  const ssl =
    sslmode === 'verify-full' || sslmode === 'verify-ca'
      ? {
          rejectUnauthorized: true,
          ...(rootcert ? { ca: readFileSync(rootcert, 'utf8') } : {}),
          // verify-ca checks the chain but not the name (as libpq does).
          ...(sslmode === 'verify-ca' ? { checkServerIdentity: () => undefined } : { servername: host }),
        }
      : sslmode === 'require'
        ? { rejectUnauthorized: false }
        : undefined;
  return {
    host,
    port: Number(u.port || 5432),
    database: decodeURIComponent(u.pathname.replace(/^\//, '')) || 'postgres',
    user: decodeURIComponent(u.username),
    ...(ssl ? { ssl } : {}),
  };
}
