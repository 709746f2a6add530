/**
 * The fields a log record or a span may carry — and nothing else: a token, secret, GraphQL variable or record
 * value cannot leak through an object that happens to be logged or traced. Names, ids, counts and codes only.
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
  'page',
  'slice',
  'created',
  'updated',
  'deleted',
  'unchanged',
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
  'kind',
  'trigger',
  'outcome',
  'applied',
  'failed',
  'outcomeUnknown',
  'skipped',
  'pending',
  'invocationId',
  'pageSize',
] as const;
export type LogField = (typeof LOG_FIELDS)[number];
export type LogData = Partial<Record<LogField, string | number | boolean | undefined>>;
