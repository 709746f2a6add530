import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { parseOtlpHeaders } from '../../shared/telemetry/otlp-headers';

/*
 * OTEL_EXPORTER_OTLP_HEADERS_SECRET_NAME through the built app as the host starts it (appContext, its settings from
 * the environment): the headers come from the secret store — the local file here, Key Vault in Azure, the same
 * SecretStore — and reach an OTLP endpoint on loopback with every export; never a log line; never a redirect.
 */
const root = resolve(__dirname, '../..');

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
}

function receiver(answer: (path: string) => { status: number; location?: string }) {
  const received: Received[] = [];
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received.push({ path: req.url ?? '', headers: req.headers });
      const a = answer(req.url ?? '');
      res.writeHead(a.status, {
        'content-type': 'application/json',
        ...(a.location ? { location: a.location } : {}),
      });
      res.end('{}');
    });
  });
  return new Promise<{ url: string; received: Received[]; close: () => Promise<void> }>((done) =>
    server.listen(0, '127.0.0.1', () =>
      done({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        received,
        close: () => new Promise((closed) => server.close(() => closed())),
      }),
    ),
  );
}

describe('OTLP headers from the secret store', () => {
  it('parses the standard form; refuses what is not, naming no value', () => {
    expect(parseOtlpHeaders('authorization=Bearer%20abc, x-scope = tenant%2Cone ,')).toEqual({
      authorization: 'Bearer abc',
      'x-scope': 'tenant,one',
    });
    expect(() => parseOtlpHeaders('Bearer abc')).toThrow(/pair 1 is not name=value/);
    expect(() => parseOtlpHeaders('a=%E0%A4%A')).toThrow(/value of a is not percent-encoded/);
    expect(() => parseOtlpHeaders('a=x%0d%0aInjected: 1')).toThrow(/line break/);
    expect(() => parseOtlpHeaders(`a=${'x'.repeat(9000)}`)).toThrow(/more than 8192 bytes/);
    for (const bad of ['Bearer abc', 'a=%E0%A4%A'])
      try {
        parseOtlpHeaders(bad);
      } catch (err) {
        expect((err as Error).message).not.toContain('abc');
      }
  });

  it('every export carries the headers the secret holds; a redirect is never followed with them', async () => {
    const elsewhere = await receiver(() => ({ status: 200 }));
    const collector = await receiver((path) =>
      path === '/v1/logs' ? { status: 307, location: `${elsewhere.url}/v1/logs` } : { status: 200 },
    );
    const dir = mkdtempSync(join(tmpdir(), 'ti-otlp-'));
    const secrets = join(dir, 'secrets.json');
    writeFileSync(secrets, JSON.stringify({ 'otlp-headers': 'authorization=Bearer%20k3y,x-team=data' }));
    // The built app in a process of its own, as the host loads it (jest's sandbox cannot run the exporter's import()).
    // Not spawnSync: the receivers answer from this process's event loop.
    const child = await promisify(execFile)(
      process.execPath,
      [
        '-e',
        `const { appContext } = require(${JSON.stringify(join(root, 'dist/shared/app'))});
         const app = appContext();
         app.logger.log('info', 'otlp headers test record', {});
         app.traced('otlp headers test', {}, async () => 42).then((v) => process.stdout.write(String(v)));`,
      ],
      {
        env: {
          PATH: process.env.PATH,
          OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
          OTEL_EXPORTER_OTLP_HEADERS_SECRET_NAME: 'otlp-headers',
          LOCAL_SECRETS_FILE: secrets,
          OTEL_SERVICE_NAME: 'ti-headers-test',
        },
        timeout: 30_000,
      },
    );
    expect(child.stdout).toBe('42');
    // The app's log lines name no header value.
    expect(child.stderr).not.toContain('k3y');
    const traces = collector.received.filter((r) => r.path === '/v1/traces');
    expect(traces.length).toBeGreaterThan(0);
    for (const r of traces)
      expect(r.headers).toMatchObject({ authorization: 'Bearer k3y', 'x-team': 'data' });
    // The log records' endpoint answered with a redirect: the exporter does not follow it, so the credential never
    // reaches the other address.
    expect(collector.received.some((r) => r.path === '/v1/logs')).toBe(true);
    expect(elsewhere.received).toEqual([]);
    await collector.close();
    await elsewhere.close();
  });

  it('a headers secret that cannot be read fails the export, said once by the secret’s name, and the work goes on', async () => {
    const collector = await receiver(() => ({ status: 200 }));
    const dir = mkdtempSync(join(tmpdir(), 'ti-otlp-'));
    const secrets = join(dir, 'secrets.json');
    writeFileSync(secrets, JSON.stringify({ other: 'x=y' }));
    const child = await promisify(execFile)(
      process.execPath,
      [
        '-e',
        `const { appContext } = require(${JSON.stringify(join(root, 'dist/shared/app'))});
         const app = appContext();
         (async () => {
           for (const n of [1, 2, 3]) await app.traced('otlp headers test ' + n, {}, async () => n);
           process.stdout.write('done');
         })();`,
      ],
      {
        env: {
          PATH: process.env.PATH,
          OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
          OTEL_EXPORTER_OTLP_HEADERS_SECRET_NAME: 'otlp-headers',
          LOCAL_SECRETS_FILE: secrets,
        },
        timeout: 30_000,
      },
    );
    expect(child.stdout).toBe('done');
    const said = child.stderr.split('\n').filter((l) => l.includes('otlp headers unreadable'));
    expect(said).toHaveLength(1);
    expect(said[0]).toContain('otlp-headers');
    expect(collector.received.filter((r) => r.path === '/v1/traces')).toEqual([]);
    await collector.close();
  });
});
