import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';

/** Azurite's published development account (not a secret: the same in every copy of Azurite). */
const ACCOUNT = 'devstoreaccount1';
const KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';

export interface RunningAzurite {
  connectionString: string;
  blobPort: number;
  queuePort: number;
  tablePort: number;
  stop(): Promise<void>;
}

/** Starts Azurite from npm, in memory, on free loopback ports; resolves when all three services listen. */
export function startAzurite(options: { timeoutMs?: number } = {}): Promise<RunningAzurite> {
  const bin = join(dirname(require.resolve('azurite/package.json')), 'dist', 'src', 'azurite.js');
  const args = [
    '--inMemoryPersistence',
    '--skipApiVersionCheck',
    '--loose',
    '--disableTelemetry',
    '--silent',
  ];
  for (const s of ['blob', 'queue', 'table']) args.push(`--${s}Host`, '127.0.0.1', `--${s}Port`, '0');
  const child: ChildProcess = spawn(process.execPath, [bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((resolve, reject) => {
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
        /Azurite (Blob|Queue|Table) service is successfully listening at http:\/\/127\.0\.0\.1:(\d+)/g,
      )) {
        ports[m[1].toLowerCase()] = Number(m[2]);
      }
      if (ports.blob && ports.queue && ports.table) {
        clearTimeout(timer);
        child.stdout?.off('data', onData);
        const base = 'http://127.0.0.1';
        resolve({
          connectionString:
            `DefaultEndpointsProtocol=http;AccountName=${ACCOUNT};AccountKey=${KEY};` +
            `BlobEndpoint=${base}:${ports.blob}/${ACCOUNT};QueueEndpoint=${base}:${ports.queue}/${ACCOUNT};TableEndpoint=${base}:${ports.table}/${ACCOUNT};`,
          blobPort: ports.blob,
          queuePort: ports.queue,
          tablePort: ports.table,
          stop: () =>
            new Promise<void>((done) => {
              if (child.exitCode !== null) return done();
              const kill = setTimeout(() => child.kill('SIGKILL'), 5_000);
              child.once('exit', () => {
                clearTimeout(kill);
                done();
              });
              child.kill('SIGTERM');
            }),
        });
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', (c: Buffer) => (output += c.toString()));
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`Azurite exited with ${code}: ${output.slice(-500)}`));
    });
  });
}
