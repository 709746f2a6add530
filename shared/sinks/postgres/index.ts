import type { Pool } from 'pg';
import { z } from 'zod';
import { partOf, type AppConfig } from '../../config';
import { SINK_OUTPUT } from '../output';
import type { SinkModule } from '../types';
import { defaultSchema } from './names';
import { postgresPool } from './pool';
import { POSTGRES_SETTINGS, postgresSettings } from './settings';
import { PostgresSink } from './sink';

export { defaultSchema, SINK_PAGES_TABLE, SINK_QUARANTINE_TABLE, SINK_RUNS_TABLE } from './names';
export { POSTGRES_ENTRA_SCOPE, postgresPool, postgresTarget } from './pool';
export { postgresSettings, type PostgresSettings } from './settings';
export { BATCH_ROWS, PostgresSink, type PostgresSinkOptions } from './sink';

/** Where the sink's server is, for messages: the host, never the URL's user or anything else in it. */
const serverOf = (config: AppConfig) => {
  const pg = postgresSettings(config);
  return pg?.host ?? (pg?.url ? new URL(pg.url).host : 'PostgreSQL');
};

export const postgresSink: SinkModule = {
  kind: 'postgres',
  usage: 'postgres',
  argument: z.undefined({
    error: 'takes nothing after "postgres": the server is POSTGRES_URL or POSTGRES_HOST',
  }),
  settings: POSTGRES_SETTINGS,
  requires: (_spec, { own }) =>
    own ? undefined : 'the postgres sink needs POSTGRES_URL, or POSTGRES_HOST and POSTGRES_USER',
  create(_spec, { config, secrets, clients }) {
    const given = clients?.postgresPool;
    const pg = postgresSettings(config);
    let pool: Pool | undefined;
    const sink = new PostgresSink(() => (pool ??= given?.() ?? postgresPool(config, secrets)), {
      schema: pg?.schema ?? defaultSchema(config.tenant?.name ?? 'sandbox'),
      softDelete: pg?.softDelete ?? false,
      rejected: partOf(config, SINK_OUTPUT).rejectedRecords,
      batchRows: pg?.batchRows,
    });
    // A pool it was given belongs to whoever gave it; one it made is ended here (idle connections would keep a
    // command alive for the pool's idle timeout, and a failed sign-in longer).
    sink.close = async () => {
      const made = given ? undefined : pool;
      pool = undefined;
      await made?.end();
    };
    return sink;
  },
  async doctor(_spec, { config, secrets }) {
    if (!postgresSettings(config))
      return {
        state: 'fail',
        found: 'SYNC_SINKS names postgres but neither POSTGRES_URL nor POSTGRES_HOST is set',
        action: 'Set POSTGRES_URL, or POSTGRES_HOST and POSTGRES_USER.',
      };
    const pool = postgresPool(config, secrets);
    try {
      await pool.query('SELECT 1');
    } finally {
      await pool.end();
    }
    return { state: 'ok', found: `PostgreSQL at ${serverOf(config)} accepts the app’s sign-in` };
  },
};

declare module '../types' {
  interface SinkClients {
    /** A pool to the postgres sink's server (the caller's: not ended by the sink). */
    postgresPool: () => Pool;
  }
}
