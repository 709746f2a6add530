import type { TokenCredential } from '@azure/identity';
import type { IdGenerator } from '@opentelemetry/sdk-trace-base';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TelemetrySettings } from '../config';
import { FORCED_IDS, spansRecorded } from './index';

/**
 * The OpenTelemetry SDK, set up once per process when telemetry is configured — to an OTLP endpoint
 * (`OTEL_EXPORTER_OTLP_ENDPOINT`, the standard setting) and/or to Application Insights
 * (`APPLICATIONINSIGHTS_CONNECTION_STRING`, signed in with the app's identity). Loaded on first use, so registering
 * the functions (the cold start) never pays for it. Without either setting nothing loads: the API's calls are
 * no-ops.
 */
export interface Telemetry {
  /** Sends what is buffered; an invocation calls it before it returns, as the host may freeze the process. */
  flush(): Promise<void>;
  shutdown(): Promise<void>;
  /** Where it goes, for the banner and doctor. */
  destinations: string[];
}

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

/** Random ids, except for a run's own span, whose ids were fixed by the run id (./index.ts `endRunSpan`). */
class RunIdGenerator implements IdGenerator {
  private forced() {
    return (globalThis as typeof globalThis & { [FORCED_IDS]?: { traceId: string; spanId: string } })[
      FORCED_IDS
    ];
  }
  generateTraceId(): string {
    return this.forced()?.traceId ?? hex(16);
  }
  generateSpanId(): string {
    return this.forced()?.spanId ?? hex(8);
  }
}

/** The app's version from the package it runs from (the staged package in Azure), when it can be read. */
function versionAttribute(appDir: string): Record<string, string> {
  try {
    const { version } = JSON.parse(readFileSync(join(appDir, 'package.json'), 'utf8')) as {
      version?: unknown;
    };
    return typeof version === 'string' ? { 'service.version': version } : {};
  } catch {
    return {};
  }
}

/** How long an invocation waits for its telemetry to leave before it gives up on it (never fails the work). */
export const FLUSH_TIMEOUT_MS = 5_000;

export function setupTelemetry(
  settings: TelemetrySettings,
  options: {
    credential?: () => TokenCredential;
    /** The OTLP endpoint's headers, asked before each request (./otlp-headers.ts: from the secret store). */
    otlpHeaders?: () => Promise<Record<string, string>>;
  } = {},
): Telemetry | undefined {
  if (!settings.otlpEndpoint && !settings.appInsightsConnectionString) return undefined;
  /* eslint-disable @typescript-eslint/no-require-imports -- the SDK loads here, on first use */
  const { logs } = require('@opentelemetry/api-logs') as typeof import('@opentelemetry/api-logs');
  const { resourceFromAttributes } =
    require('@opentelemetry/resources') as typeof import('@opentelemetry/resources');
  const { NodeTracerProvider } =
    require('@opentelemetry/sdk-trace-node') as typeof import('@opentelemetry/sdk-trace-node');
  const { BatchSpanProcessor } =
    require('@opentelemetry/sdk-trace-base') as typeof import('@opentelemetry/sdk-trace-base');
  const { LoggerProvider, BatchLogRecordProcessor } =
    require('@opentelemetry/sdk-logs') as typeof import('@opentelemetry/sdk-logs');
  const resource = resourceFromAttributes({
    'service.name': settings.serviceName,
    ...versionAttribute(settings.appDir),
  });
  const spanProcessors: import('@opentelemetry/sdk-trace-base').SpanProcessor[] = [];
  const logProcessors: import('@opentelemetry/sdk-logs').LogRecordProcessor[] = [];
  const destinations: string[] = [];
  if (settings.otlpEndpoint) {
    const { OTLPTraceExporter } =
      require('@opentelemetry/exporter-trace-otlp-http') as typeof import('@opentelemetry/exporter-trace-otlp-http');
    const { OTLPLogExporter } =
      require('@opentelemetry/exporter-logs-otlp-http') as typeof import('@opentelemetry/exporter-logs-otlp-http');
    const base = settings.otlpEndpoint.replace(/\/+$/, '');
    const headers = options.otlpHeaders ? { headers: options.otlpHeaders } : {};
    spanProcessors.push(
      new BatchSpanProcessor(new OTLPTraceExporter({ url: `${base}/v1/traces`, ...headers })),
    );
    logProcessors.push(
      new BatchLogRecordProcessor({
        exporter: new OTLPLogExporter({ url: `${base}/v1/logs`, ...headers }),
      }),
    );
    destinations.push(`OTLP ${new URL(base).origin}`);
  }
  if (settings.appInsightsConnectionString) {
    const monitor =
      require('@azure/monitor-opentelemetry-exporter') as typeof import('@azure/monitor-opentelemetry-exporter');
    const exporterOptions = {
      connectionString: settings.appInsightsConnectionString,
      // Local (key) auth is off on the component (infra/modules/monitoring.bicep): the app's identity signs in.
      ...(options.credential ? { credential: options.credential() } : {}),
    };
    spanProcessors.push(new BatchSpanProcessor(new monitor.AzureMonitorTraceExporter(exporterOptions)));
    logProcessors.push(
      new BatchLogRecordProcessor({ exporter: new monitor.AzureMonitorLogExporter(exporterOptions) }),
    );
    destinations.push('Application Insights');
  }
  /* eslint-enable @typescript-eslint/no-require-imports */
  const tracerProvider = new NodeTracerProvider({
    resource,
    idGenerator: new RunIdGenerator(),
    spanProcessors,
  });
  tracerProvider.register();
  spansRecorded();
  const loggerProvider = new LoggerProvider({ resource, processors: logProcessors });
  logs.setGlobalLoggerProvider(loggerProvider);
  const within = (work: Promise<unknown>) =>
    Promise.race([
      work.then(() => undefined),
      new Promise<void>((done) => setTimeout(done, FLUSH_TIMEOUT_MS).unref()),
    ]).catch(() => undefined);
  return {
    destinations,
    flush: () => within(Promise.all([tracerProvider.forceFlush(), loggerProvider.forceFlush()])),
    shutdown: () => within(Promise.all([tracerProvider.shutdown(), loggerProvider.shutdown()])),
  };
}
