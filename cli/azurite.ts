import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/** Azurite's published development account (not a secret: the same in every copy of Azurite). */
const ACCOUNT = 'devstoreaccount1';
const KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';

export interface RunningAzurite {
  connectionString: string;
  /** With `tls`: the blob endpoint (https) and the certificate a client must trust to reach it. */
  blobUrl: string;
  caFile?: string;
  ca?: string;
  /** The certificate's key (a test's HTTPS receiver can present the same certificate). */
  keyFile?: string;
  blobPort: number;
  queuePort: number;
  tablePort: number;
  /** Azurite's process (a bench pins it to cores). */
  pid?: number;
  stop(): Promise<void>;
}

/**
 * A self-signed certificate for 127.0.0.1 and localhost, written to `dir`. Azurite accepts Bearer tokens
 * (and so user-delegation SAS, what export links are) only over HTTPS.
 */
export async function localCertificate(
  dir: string,
): Promise<{ certFile: string; keyFile: string; cert: string }> {
  // A development dependency, like Azurite: loaded only when a local stack starts.
  const { generate } = await import('selfsigned');
  const pems = await generate([{ name: 'commonName', value: 'tenant-integrations local Azurite' }], {
    keyType: 'ec',
    curve: 'P-256',
    notAfterDate: new Date(Date.now() + 30 * 86_400_000),
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'extKeyUsage', serverAuth: true },
      {
        name: 'subjectAltName',
        altNames: [
          { type: 7, ip: '127.0.0.1' },
          { type: 2, value: 'localhost' },
        ],
      },
    ],
  });
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const certFile = join(dir, 'cert.pem');
  const keyFile = join(dir, 'key.pem');
  await writeFile(certFile, pems.cert);
  await writeFile(keyFile, pems.private, { mode: 0o600 });
  return { certFile, keyFile, cert: pems.cert };
}

/**
 * What to put in NODE_EXTRA_CA_CERTS so a process trusts `caFile` too: Node takes a single file, so when the
 * environment already names one (a corporate proxy's CA, a system bundle), both go into `trust.pem` beside it.
 */
export function extraCaBundle(caFile: string, env: NodeJS.ProcessEnv = process.env): string {
  const existing = env.NODE_EXTRA_CA_CERTS;
  if (!existing || existing === caFile) return caFile;
  let before = '';
  try {
    before = readFileSync(existing, 'utf8');
  } catch {
    return caFile; // the setting names no readable file: Node would ignore it too
  }
  const bundle = join(dirname(caFile), 'trust.pem');
  writeFileSync(bundle, `${before.trimEnd()}\n${readFileSync(caFile, 'utf8')}`);
  return bundle;
}

/**
 * Starts Azurite from npm, in memory, on free loopback ports; resolves when all three services listen.
 * `tls`: over HTTPS with OAuth in basic mode (tokens checked for issuer, audience and lifetime, not signature),
 * so the app's managed-identity code path — Bearer token, user-delegation key, SAS — runs locally; the
 * certificate goes to `tls.dir` (a temporary folder by default) for clients to trust (NODE_EXTRA_CA_CERTS).
 */
export async function startAzurite(
  options: {
    timeoutMs?: number;
    tls?: boolean | { dir: string };
    /** Keep data in this folder instead of memory, so a restart finds it (fault tests). */
    location?: string;
    /** Listen on these ports instead of free ones (a restart on the same endpoints). */
    ports?: { blob: number; queue: number; table: number };
  } = {},
): Promise<RunningAzurite> {
  const bin = join(dirname(require.resolve('azurite/package.json')), 'dist', 'src', 'azurite.js');
  const args = [
    ...(options.location ? ['--location', options.location] : ['--inMemoryPersistence']),
    '--skipApiVersionCheck',
    '--loose',
    '--disableTelemetry',
    '--silent',
  ];
  for (const s of ['blob', 'queue', 'table'] as const)
    args.push(`--${s}Host`, '127.0.0.1', `--${s}Port`, String(options.ports?.[s] ?? 0));
  let tls: { dir: string; temporary: boolean; certFile: string; keyFile: string; cert: string } | undefined;
  if (options.tls) {
    const temporary = options.tls === true;
    const dir = options.tls === true ? await mkdtemp(join(tmpdir(), 'ti-azurite-')) : options.tls.dir;
    const made = await localCertificate(dir);
    tls = { dir, temporary, ...made };
    args.push('--oauth', 'basic', '--cert', made.certFile, '--key', made.keyFile);
  }
  const cleanup = () => (tls?.temporary ? rm(tls.dir, { recursive: true, force: true }) : Promise.resolve());
  const child: ChildProcess = spawn(process.execPath, [bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise<RunningAzurite>((resolve, reject) => {
    const ports: Record<string, number> = {};
    let output = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(`Azurite did not start within ${options.timeoutMs ?? 30_000} ms: ${output.slice(-500)}`),
      );
    }, options.timeoutMs ?? 30_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      for (const m of output.matchAll(
        /Azurite (Blob|Queue|Table) service is successfully listening at https?:\/\/127\.0\.0\.1:(\d+)/g,
      )) {
        ports[m[1].toLowerCase()] = Number(m[2]);
      }
      if (ports.blob && ports.queue && ports.table) {
        clearTimeout(timer);
        child.stdout?.off('data', onData);
        const scheme = tls ? 'https' : 'http';
        const base = `${scheme}://127.0.0.1`;
        resolve({
          connectionString:
            `DefaultEndpointsProtocol=${scheme};AccountName=${ACCOUNT};AccountKey=${KEY};` +
            `BlobEndpoint=${base}:${ports.blob}/${ACCOUNT};QueueEndpoint=${base}:${ports.queue}/${ACCOUNT};TableEndpoint=${base}:${ports.table}/${ACCOUNT};`,
          blobUrl: `${base}:${ports.blob}/${ACCOUNT}`,
          caFile: tls?.certFile,
          ca: tls?.cert,
          keyFile: tls?.keyFile,
          blobPort: ports.blob,
          queuePort: ports.queue,
          tablePort: ports.table,
          pid: child.pid,
          stop: () =>
            new Promise<void>((done) => {
              if (child.exitCode !== null) return done();
              const kill = setTimeout(() => child.kill('SIGKILL'), 5_000);
              child.once('exit', () => {
                clearTimeout(kill);
                done();
              });
              child.kill('SIGTERM');
            }).then(cleanup),
        });
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', (c: Buffer) => (output += c.toString()));
    child.once('exit', (code) => {
      clearTimeout(timer);
      void cleanup();
      reject(new Error(`Azurite exited with ${code}: ${output.slice(-500)}`));
    });
  });
}
