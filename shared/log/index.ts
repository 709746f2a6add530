/**
 * Allow-listed structured logging: only the fields named here reach a log line, so a token, secret or
 * GraphQL variable cannot leak through an object that happens to be logged.
 */
export const LOG_FIELDS = [
  'operation',
  'durationMs',
  'attempt',
  'status',
  'endpoint',
  'stream',
  'sink',
  'records',
  'pages',
  'code',
  'instanceId',
  'tenant',
  'secretName',
  'clientId',
  'retryInMs',
  'state',
  'count',
  'reason',
  'runId',
] as const;
export type LogField = (typeof LOG_FIELDS)[number];
export type LogData = Partial<Record<LogField, string | number | boolean | undefined>>;
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

/** One JSON line per entry on stderr; quiet below `minLevel`. */
export function stderrLogger(minLevel: Level = 'info'): Logger {
  const order: Level[] = ['debug', 'info', 'warn', 'error'];
  return createLogger((line) => {
    if (order.indexOf(line.level) >= order.indexOf(minLevel))
      process.stderr.write(`${JSON.stringify(line)}\n`);
  });
}

export const silentLogger: Logger = { log: () => undefined };
