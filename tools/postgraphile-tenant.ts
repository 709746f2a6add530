import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { startSandbox, type RunningSandbox } from '../sandbox/server';
import { startPostgres, type Postgres } from './postgres-server';

/**
 * For tests and benches — a tenant nobody here wrote: PostGraphile v4 with its defaults (plus the plugins a test names) over a real
 * PostgreSQL holding tables of our design — integer, UUID and composite primary keys, a table without a key that
 * holds identical rows, reverse relations on every type, a relation reachable only through its parent (evidence:
 * `@omit all`, so only `control.evidencesByControlId`), and a large table with an `updated_at` an update moves. It
 * trusts the sandbox's identity provider (the tokens the app gets for `TENANT_AUTH_URL`), checked on every request.
 */
export interface PostgraphileTenantOptions {
  /** Rows of the large `reading` table (default 100). */
  readings?: number;
  /** npm plugins appended to PostGraphile's defaults (e.g. 'postgraphile-plugin-connection-filter'). */
  plugins?: string[];
  /** A key each record of one table answers once (`"sensor":`): `stats().served` counts the records served. */
  countMarker?: string;
}

export const TENANT_SQL = (readings: number) => /* sql */ `
  create schema app;
  create function app.touch() returns trigger language plpgsql as $$
    begin new.updated_at := clock_timestamp(); return new; end $$;
  create table app.organisation (
    id serial primary key, name text not null,
    updated_at timestamptz not null default clock_timestamp());
  create table app.person (
    id serial primary key, organisation_id int not null references app.organisation, name text not null,
    email text, updated_at timestamptz not null default clock_timestamp());
  create index on app.person (organisation_id);
  create table app.control (
    id serial primary key, owner_id int not null references app.person, title text not null,
    status text not null default 'draft', updated_at timestamptz not null default clock_timestamp());
  create index on app.control (owner_id);
  create table app.evidence (
    id uuid primary key default gen_random_uuid(), control_id int not null references app.control,
    note text not null, updated_at timestamptz not null default clock_timestamp());
  create index on app.evidence (control_id);
  comment on table app.evidence is E'@omit all';
  create table app.kpi_value (
    kpi_id int not null, period text not null, value numeric not null,
    updated_at timestamptz not null default clock_timestamp(), primary key (kpi_id, period));
  create table app.audit_entry (at timestamptz not null, actor text not null, action text not null);
  create table app.reading (
    id bigserial primary key, sensor text not null, value double precision not null,
    updated_at timestamptz not null default clock_timestamp());
  create index on app.reading (updated_at);
  ${['organisation', 'person', 'control', 'evidence', 'kpi_value', 'reading']
    .map((t) => `create trigger touch before update on app.${t} for each row execute function app.touch();`)
    .join('\n')}
  -- Stamped in the past, a minute apart, as a tenant's records are: what a sync sees change is what a test changes.
  insert into app.organisation (name, updated_at) select 'Org ' || n, timestamptz '2026-01-01' + n * interval '1 minute' from generate_series(1, 3) n;
  insert into app.person (organisation_id, name, email, updated_at)
    select 1 + n % 3, 'Person ' || n, 'p' || n || '@example.test', timestamptz '2026-01-01' + n * interval '1 minute' from generate_series(1, 50) n;
  insert into app.control (owner_id, title, status, updated_at)
    select 1 + n % 50, 'Control ' || n, (array['draft','active','retired'])[1 + n % 3], timestamptz '2026-01-01' + n * interval '1 minute'
    from generate_series(1, 200) n;
  -- Evidence for the first 60 controls: none for the rest, three for every tenth.
  insert into app.evidence (control_id, note, updated_at)
    select c, 'Evidence ' || c || '.' || k, timestamptz '2026-01-01' + (c * 3 + k) * interval '1 minute'
    from generate_series(1, 60) c, generate_series(1, 3) k where k = 1 or c % 10 = 0;
  insert into app.kpi_value (kpi_id, period, value, updated_at)
    select k, '2026-' || lpad(m::text, 2, '0'), k * 100 + m, timestamptz '2026-01-01' + (k * 12 + m) * interval '1 minute'
    from generate_series(1, 5) k, generate_series(1, 12) m;
  -- Twenty entries, two of them twice and one three times: 20 rows, 16 distinct.
  insert into app.audit_entry (at, actor, action)
    select timestamptz '2026-01-01' + n * interval '1 hour', 'actor' || n % 4, 'action ' || n from generate_series(1, 16) n;
  insert into app.audit_entry select * from app.audit_entry order by at limit 2;
  insert into app.audit_entry select * from app.audit_entry where action = 'action 5';
  insert into app.audit_entry select * from app.audit_entry where action = 'action 5' limit 1;
  insert into app.reading (sensor, value, updated_at)
    select 'sensor-' || n % 20, n / 7.0, timestamptz '2026-01-01' + n * interval '1 minute' from generate_series(1, ${Math.max(0, Math.floor(readings))}) n;
  analyze;
`;

/** The counts TENANT_SQL holds: what a sync must deliver. */
export const TENANT_ROWS = {
  organisation: 3,
  person: 50,
  control: 200,
  evidence: 60 + 6 * 2,
  kpi_value: 60,
  audit_entry: { rows: 20, distinct: 16 },
};

/** The server's script: beside this file in the sources, two folders up from the compiled one (dist/tools). */
const SERVER_SCRIPT = [
  join(__dirname, 'postgraphile-server.cjs'),
  resolve(__dirname, '..', '..', 'tools', 'postgraphile-server.cjs'),
].find((f) => existsSync(f)) as string;

async function spawnServer(env: Record<string, string>): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, [SERVER_SCRIPT], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const port = await new Promise<number>((ok, fail) => {
    let out = '';
    const timer = setTimeout(() => fail(new Error(`PostGraphile did not start in 30 s: ${err}`)), 30_000);
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening (\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        ok(Number(m[1]));
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`PostGraphile exited (${code}): ${err}`));
    });
  });
  return { child, port };
}

export async function startPostgraphileTenant(options: PostgraphileTenantOptions = {}) {
  const pg: Postgres = await startPostgres();
  let idp: RunningSandbox | undefined;
  let child: ChildProcess | undefined;
  try {
    await pg.pool.query(TENANT_SQL(options.readings ?? 100));
    // The sandbox as the identity provider only: it holds no records of its own.
    idp = await startSandbox({ records: 0 });
    const issuer = `${idp.authUrl}/realms/${idp.tenant}`;
    const started = await spawnServer({
      PG_TENANT_DATABASE_URL: pg.url,
      PG_TENANT_SCHEMA: 'app',
      PG_TENANT_JWKS: `${issuer}/protocol/openid-connect/certs`,
      PG_TENANT_ISSUER: issuer,
      PG_TENANT_PLUGINS: (options.plugins ?? []).join(','),
      PG_TENANT_COUNT: options.countMarker ?? '',
    });
    child = started.child;
    const baseUrl = `http://127.0.0.1:${started.port}`;
    const server = child;
    const provider = idp;
    return {
      pg,
      baseUrl,
      authUrl: provider.authUrl,
      tenant: provider.tenant,
      clientId: provider.clientId,
      /** The client credential's secret (the identity provider's demo client). */
      clientSecret: provider.clientSecret,
      /** The app settings that point the CLI at PostGraphile, signed in through the sandbox's identity provider. */
      settings: {
        TENANT_NAME: provider.tenant,
        TENANT_BASE_URL: baseUrl,
        TENANT_AUTH_URL: provider.authUrl,
        TENANT_CLIENT_ID: provider.clientId,
      },
      /** Requests PostGraphile answered (token accepted) and refused; records served (with `countMarker`). */
      stats: async (options: { reset?: boolean } = {}) =>
        (await (await fetch(`${baseUrl}/_stats${options.reset ? '?reset=1' : ''}`)).json()) as {
          requests: number;
          refused: number;
          served: number;
        },
      /** PostGraphile's process, and PostgreSQL's postmaster: what the server's CPU time is read from. */
      pids: { postgraphile: server.pid, postgres: pg.pid },
      stop: async () => {
        await new Promise<void>((ok) => {
          if (server.exitCode !== null) return ok();
          server.once('exit', () => ok());
          server.kill('SIGTERM');
        });
        await provider.close();
        await pg.stop();
      },
    };
  } catch (e) {
    child?.kill('SIGKILL');
    await idp?.close();
    await pg.stop();
    throw e;
  }
}

export type PostgraphileTenant = Awaited<ReturnType<typeof startPostgraphileTenant>>;
