import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/**
 * A real OpenTelemetry Collector (tools/otelcol: the upstream OTLP receiver and the contrib file exporter), built
 * with Go once into .cache/otelcol/ (`.ci/run` builds it before the suites), on a free loopback port. What it
 * receives it writes as OTLP JSON, one batch a line; `received()` reads it back as spans and log records.
 */
const ROOT = resolve(__dirname, '..', '..');
const SOURCE = join(ROOT, 'tools', 'otelcol');
export const COLLECTOR = join(ROOT, '.cache', 'otelcol', 'otelcol');

export function collectorBinary(): string {
  if (existsSync(COLLECTOR)) return COLLECTOR;
  mkdirSync(join(ROOT, '.cache', 'otelcol'), { recursive: true });
  try {
    execFileSync('go', ['build', '-trimpath', '-o', COLLECTOR, '.'], {
      cwd: SOURCE,
      stdio: ['ignore', 'ignore', 'pipe'],
      timeout: 20 * 60_000,
    });
  } catch (err) {
    throw new Error(
      `the OpenTelemetry Collector (tools/otelcol) could not be built with Go: ${(err as { stderr?: Buffer }).stderr?.toString() ?? (err as Error).message}` +
        '\nInstall Go 1.25 or newer (or run bash .ci/run, which does), then run the tests again.',
    );
  }
  return COLLECTOR;
}

/** A port free on loopback now (the tests' servers each take one). */
export const freePort = () =>
  new Promise<number>((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => done(port));
    });
  });

type AnyValue = {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
};
type KeyValue = { key: string; value: AnyValue };

/** A span as the collector received it, attributes flattened. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: Record<string, string | number | boolean>;
  status?: { code?: number; message?: string };
  service: string;
}

export interface ReceivedLog {
  traceId?: string;
  spanId?: string;
  body: string;
  severityText?: string;
  attributes: Record<string, string | number | boolean>;
  service: string;
}

const value = (v: AnyValue) =>
  v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : (v.boolValue ?? v.doubleValue ?? ''));
const flat = (kvs: KeyValue[] = []) => Object.fromEntries(kvs.map((kv) => [kv.key, value(kv.value)]));

export async function startCollector() {
  const binary = collectorBinary();
  const dir = await mkdtemp(join(tmpdir(), 'ti-otelcol-'));
  const port = await freePort();
  const file = join(dir, 'received.jsonl');
  await writeFile(
    join(dir, 'config.yaml'),
    [
      'receivers:',
      '  otlp:',
      '    protocols:',
      '      http:',
      `        endpoint: 127.0.0.1:${port}`,
      'exporters:',
      '  file:',
      `    path: ${file}`,
      '    flush_interval: 50ms',
      'service:',
      '  telemetry:',
      '    metrics:',
      '      level: none',
      '  pipelines:',
      '    traces: { receivers: [otlp], exporters: [file] }',
      '    logs: { receivers: [otlp], exporters: [file] }',
      '',
    ].join('\n'),
  );
  const child = spawn(binary, ['--config', join(dir, 'config.yaml')], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  await new Promise<void>((done, fail) => {
    const timer = setTimeout(() => fail(new Error(`the collector did not start: ${stderr}`)), 60_000);
    child.stderr.on('data', () => {
      if (stderr.includes('Everything is ready')) {
        clearTimeout(timer);
        done();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`the collector exited with ${code}: ${stderr}`));
    });
  });
  const received = () => {
    const spans: ReceivedSpan[] = [];
    const logs: ReceivedLog[] = [];
    const text = existsSync(file) ? readFileSync(file, 'utf8') : '';
    // Whole lines only: the collector may be writing the last one as we read (a line is one batch, ended by \n).
    const complete = text.slice(0, text.lastIndexOf('\n') + 1);
    for (const line of complete.split('\n').filter(Boolean)) {
      const batch = JSON.parse(line) as {
        resourceSpans?: Array<{
          resource?: { attributes?: KeyValue[] };
          scopeSpans?: Array<{
            spans?: Array<Omit<ReceivedSpan, 'attributes' | 'service'> & { attributes?: KeyValue[] }>;
          }>;
        }>;
        resourceLogs?: Array<{
          resource?: { attributes?: KeyValue[] };
          scopeLogs?: Array<{
            logRecords?: Array<{
              traceId?: string;
              spanId?: string;
              body?: AnyValue;
              severityText?: string;
              attributes?: KeyValue[];
            }>;
          }>;
        }>;
      };
      for (const rs of batch.resourceSpans ?? []) {
        const service = String(flat(rs.resource?.attributes)['service.name'] ?? '');
        for (const ss of rs.scopeSpans ?? [])
          for (const s of ss.spans ?? []) spans.push({ ...s, attributes: flat(s.attributes), service });
      }
      for (const rl of batch.resourceLogs ?? []) {
        const service = String(flat(rl.resource?.attributes)['service.name'] ?? '');
        for (const sl of rl.scopeLogs ?? [])
          for (const l of sl.logRecords ?? [])
            logs.push({
              traceId: l.traceId || undefined,
              spanId: l.spanId || undefined,
              body: String(value(l.body ?? {})),
              severityText: l.severityText,
              attributes: flat(l.attributes),
              service,
            });
      }
    }
    return { spans, logs, text };
  };
  return {
    endpoint: `http://127.0.0.1:${port}`,
    received,
    close: async () => {
      await new Promise<void>((done) => {
        if (child.exitCode !== null) return done();
        child.once('exit', () => done());
        child.kill('SIGTERM');
      });
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export type Collector = Awaited<ReturnType<typeof startCollector>>;
