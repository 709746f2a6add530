import { z } from 'zod';
import { isLoopback, optional, secretName, type AppConfig } from '../../config';
import type { SinkSettingsDeclaration } from '../types';
import { BATCH_ROWS } from './sink';

/** The postgres sink's settings: a server by URL (its password from the secret store) or an Azure host (Entra). */
const shape = {
  POSTGRES_URL: optional(
    z
      .url({ protocol: /^postgres(ql)?$/ })
      .refine(
        (u) => !new URL(u).password,
        'must not hold a password: put it in the secret store (POSTGRES_PASSWORD_SECRET_NAME)',
      )
      .refine((u) => Boolean(new URL(u).username), 'must name the user: postgresql://USER@host:port/database')
      .refine((u) => {
        const url = new URL(u);
        return isLoopback(url) || url.searchParams.get('sslmode') === 'verify-full';
      }, 'a host that is not loopback needs TLS that checks its certificate: add ?sslmode=verify-full (and &sslrootcert=FILE for a private CA)')
      .refine(
        (u) =>
          ['disable', 'require', 'verify-ca', 'verify-full', null].includes(
            new URL(u).searchParams.get('sslmode'),
          ),
        'sslmode must be disable, require, verify-ca or verify-full',
      ),
  ).meta({
    description:
      'Where the `postgres` sink writes, as `postgresql://user@host:port/database` — never with a password (the server asks for one: it comes from the secret store). A host that is not loopback needs `?sslmode=verify-full` (`&sslrootcert=FILE` for a private CA).',
    default: 'unset',
    usedBy: 'sync (postgres sink)',
    group: 'sinks',
  }),
  POSTGRES_HOST: optional(z.string().regex(/^[\w.-]+$/, 'a host name')).meta({
    description:
      'Azure Database for PostgreSQL host; the app signs in with its managed identity (Microsoft Entra token as the password).',
    default: 'unset',
    usedBy: 'sync (postgres sink)',
    group: 'sinks',
  }),
  POSTGRES_DATABASE: optional(z.string().min(1).max(63)).meta({
    description: 'Database on `POSTGRES_HOST`.',
    default: '`postgres`',
    usedBy: 'sync (postgres sink)',
    group: 'sinks',
  }),
  POSTGRES_USER: optional(z.string().min(1).max(128)).meta({
    description: 'The Entra role on `POSTGRES_HOST`: the managed identity’s name.',
    default: 'unset',
    usedBy: 'sync (postgres sink)',
    group: 'sinks',
  }),
  POSTGRES_SCHEMA: optional(z.string().regex(/^[a-z_][a-z0-9_]{0,62}$/, 'a lower-case identifier')).meta({
    description: 'Schema of the sink’s tables (one per stream), created when missing.',
    default: '`tenant_<tenant>`',
    usedBy: 'sync (postgres sink)',
    group: 'sinks',
  }),
  POSTGRES_SOFT_DELETE: optional(z.enum(['true', 'false'])).meta({
    description: '`true`: a deleted record keeps its row with `deleted_at` set, instead of being removed.',
    default: '`false`',
    usedBy: 'sync (postgres sink)',
    group: 'sinks',
  }),
  POSTGRES_BATCH_ROWS: optional(
    z.coerce.number().int('a whole number').min(1, 'at least 1').max(100_000, 'at most 100000'),
  ).meta({
    description:
      'Records the sink gathers from consecutive pages before storing them in one transaction (one `COPY` for new records); the sync checkpoints a page once it is stored. Fewer: rows appear sooner during a long pass; more: faster, more memory.',
    default: '`5000`',
    usedBy: 'sync (postgres sink)',
    group: 'sinks',
  }),
  POSTGRES_PASSWORD_SECRET_NAME: optional(secretName).meta({
    description:
      'Name of the secret holding the password for `POSTGRES_URL` (none needed with trust or Entra sign-in).',
    default: '`postgres-password`',
    usedBy: 'sync (postgres sink)',
    group: 'secret-name',
  }),
};
type Settings = { [K in keyof typeof shape]: z.output<(typeof shape)[K]> };

/** Where the postgres sink writes and how, as its settings say. */
export interface PostgresSettings {
  url?: string;
  host?: string;
  database: string;
  user?: string;
  schema?: string;
  softDelete: boolean;
  batchRows: number;
  passwordSecretName: string;
}

/** The postgres sink's part of the configuration; undefined when neither POSTGRES_URL nor POSTGRES_HOST is set. */
export const postgresSettings = (config: Pick<AppConfig, 'sinks'>): PostgresSettings | undefined =>
  config.sinks.postgres as PostgresSettings | undefined;

/** The settings, their checks across each other, and the sink's part of the configuration. */
export const POSTGRES_SETTINGS: SinkSettingsDeclaration = {
  shape,
  refine(raw, issue) {
    const s = raw as Settings;
    if (s.POSTGRES_HOST && !s.POSTGRES_USER)
      issue('POSTGRES_USER', 'required with POSTGRES_HOST (the managed identity’s role name)');
    if (s.POSTGRES_HOST && s.POSTGRES_URL)
      issue('POSTGRES_URL', 'set POSTGRES_URL or POSTGRES_HOST, not both');
  },
  read(raw): PostgresSettings | undefined {
    const s = raw as Settings;
    return s.POSTGRES_URL || s.POSTGRES_HOST
      ? {
          url: s.POSTGRES_URL,
          host: s.POSTGRES_HOST,
          database: s.POSTGRES_DATABASE ?? 'postgres',
          user: s.POSTGRES_USER,
          schema: s.POSTGRES_SCHEMA,
          softDelete: s.POSTGRES_SOFT_DELETE === 'true',
          batchRows: s.POSTGRES_BATCH_ROWS ?? BATCH_ROWS,
          passwordSecretName: s.POSTGRES_PASSWORD_SECRET_NAME ?? 'postgres-password',
        }
      : undefined;
  },
};
