import { logs, SeverityNumber } from '@opentelemetry/api-logs';
import { LOG_FIELDS, type LogData, type LogField } from './fields';

export { LOG_FIELDS, type LogData, type LogField } from './fields';

export type Level = 'debug' | 'info' | 'warn' | 'error';

export interface Logger {
  log(level: Level, message: string, data?: LogData): void;
}

export type LogSink = (line: { level: Level; message: string } & LogData) => void;

const allowed = new Set<string>(LOG_FIELDS);

export function createLogger(sink: LogSink): Logger {
  return {
    log(level, message, data = {}) {
      const picked: LogData = {};
      for (const [k, v] of Object.entries(data))
        if (allowed.has(k) && v !== undefined) picked[k as LogField] = v;
      sink({ level, message, ...picked });
    },
  };
}

const ORDER: Level[] = ['debug', 'info', 'warn', 'error'];
const SEVERITY: Record<Level, SeverityNumber> = {
  debug: SeverityNumber.DEBUG,
  info: SeverityNumber.INFO,
  warn: SeverityNumber.WARN,
  error: SeverityNumber.ERROR,
};

/** One JSON line per entry on stderr; quiet below `minLevel`. */
export function stderrLogger(minLevel: Level = 'info'): Logger {
  return createLogger((line) => {
    if (ORDER.indexOf(line.level) >= ORDER.indexOf(minLevel))
      process.stderr.write(`${JSON.stringify(line)}\n`);
  });
}

/**
 * The app's logger: each record as an OpenTelemetry log (body = the message, attributes = its fields, joined to
 * the span it happened in) — a no-op until telemetry is configured (shared/telemetry/setup.ts) — and, unless
 * `stderr` is off, as one JSON line on stderr, which is what the local host, Core Tools and the CLI show.
 */
export function appLogger(
  options: {
    minLevel?: Level;
    stderr?: boolean;
    /** Before a record goes out: where the telemetry SDK is loaded on first use (shared/app.ts). */
    beforeRecord?: () => void;
  } = {},
): Logger {
  const minLevel = options.minLevel ?? 'info';
  const otel = logs.getLogger('tenant-integrations');
  return createLogger((line) => {
    if (ORDER.indexOf(line.level) < ORDER.indexOf(minLevel)) return;
    options.beforeRecord?.();
    const { level, message, ...fields } = line;
    otel.emit({
      severityNumber: SEVERITY[level],
      severityText: level.toUpperCase(),
      body: message,
      attributes: fields,
    });
    if (options.stderr !== false) process.stderr.write(`${JSON.stringify(line)}\n`);
  });
}

export const silentLogger: Logger = { log: () => undefined };
