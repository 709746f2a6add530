import {
  context,
  INVALID_SPAN_CONTEXT,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Attributes,
  type Context,
  type Span,
  type SpanContext,
} from '@opentelemetry/api';
import { createHash } from 'node:crypto';
import { codeOf } from '../errors';
import { LOG_FIELDS, type LogData } from '../log/fields';

/**
 * Traces through the OpenTelemetry API (the SDK and exporters load only when telemetry is configured:
 * ./setup.ts). Every run, whatever its kind, is one trace: its id comes from the run id, so the
 * orchestration's activities, which may run in different processes and at different times, all join it as
 * children of the run's span, and their outgoing calls (token, GraphQL page, Key Vault, storage, sink, callback)
 * as children of theirs. Attributes are the log's allow-listed fields only (shared/log/fields.ts): a span never
 * carries a token, secret, variable or record value, and a failed span's status is the error's code, not its text.
 */
const tracer = () => trace.getTracer('tenant-integrations');

/**
 * Whether spans are recorded: set by ./setup.ts once it has registered the SDK. Until then (no telemetry configured)
 * `inSpan` hands its work a span that records nothing without asking the API for one — the API's proxy tracer, its
 * no-op span and a context per call on every GraphQL request (docs/benchmarks.md).
 */
let recording = false;
export const spansRecorded = () => {
  recording = true;
};
const NOT_RECORDED = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

const allowed = new Set<string>(LOG_FIELDS);

export function attributes(fields: LogData): Attributes {
  const out: Attributes = {};
  for (const [k, v] of Object.entries(fields)) if (allowed.has(k) && v !== undefined) out[k] = v;
  return out;
}

/** The trace id and root span id of a run, from its id: the same in every process that works on it. */
export function runSpanContext(runId: string): SpanContext {
  const hash = createHash('sha256').update(`tenant-integrations run\0${runId}`).digest('hex');
  return {
    traceId: hash.slice(0, 32),
    spanId: hash.slice(32, 48),
    traceFlags: TraceFlags.SAMPLED,
    isRemote: true,
  };
}

/** A context whose parent is the run's span: where an activity's own span goes. */
export const runContext = (runId: string): Context =>
  trace.setSpanContext(ROOT_CONTEXT, runSpanContext(runId));

export interface SpanOptions<T = unknown> {
  kind?: SpanKind;
  /** Default: the active context (the caller's span). */
  parent?: Context;
  /**
   * For work that reports a failure in what it returns instead of throwing (a stream's result with `ok: false`):
   * the failure's code, which marks the span failed as a thrown error would; undefined when the work succeeded.
   */
  failure?: (result: T) => string | undefined;
}

/** Marks a span failed with an error code: its `code` attribute and an ERROR status (what queries filter on). */
function markFailed(span: Span, code: string): void {
  span.setAttribute('code', code);
  span.setStatus({ code: SpanStatusCode.ERROR, message: code });
}

/**
 * Runs `work` in a span named `name`, a child of the caller's span (or `parent`), ended when it settles. A failure
 * marks the span with its error code and is rethrown as it was.
 */
export async function inSpan<T>(
  name: string,
  fields: LogData,
  work: (span: Span) => Promise<T>,
  options: SpanOptions<T> = {},
): Promise<T> {
  if (!recording) return work(NOT_RECORDED);
  const parent = options.parent ?? context.active();
  const span = tracer().startSpan(
    name,
    { kind: options.kind ?? SpanKind.INTERNAL, attributes: attributes(fields) },
    parent,
  );
  try {
    const result = await context.with(trace.setSpan(parent, span), () => work(span));
    const failed = options.failure?.(result);
    if (failed) markFailed(span, failed);
    return result;
  } catch (err) {
    markFailed(span, codeOf(err));
    throw err;
  } finally {
    span.end();
  }
}

/**
 * Adds allow-listed fields to a span (counts known only at the end, say). A span that records nothing (no SDK
 * registered, or not sampled) gets none built (docs/benchmarks.md).
 */
export const setFields = (span: Span, fields: LogData) => {
  if (span.isRecording()) span.setAttributes(attributes(fields));
};

/** Where the SDK is told which ids the next span gets (./setup.ts reads it in its id generator). */
export const FORCED_IDS = Symbol.for('tenant-integrations.telemetry.forced-ids');
type WithForced = typeof globalThis & { [FORCED_IDS]?: { traceId: string; spanId: string } };

/**
 * The run's own span, emitted when the run ends (by whichever activity ends it) with the run's start as its start
 * and the ids every other span of the run already named as their parent — so the trace is whole however many
 * processes took part.
 */
export function endRunSpan(
  name: string,
  runId: string,
  startedAt: string,
  fields: LogData,
  failure?: string,
  endedAtMs = Date.now(),
): void {
  const { traceId, spanId } = runSpanContext(runId);
  const g = globalThis as WithForced;
  g[FORCED_IDS] = { traceId, spanId };
  let span: Span;
  try {
    span = tracer().startSpan(name, {
      root: true,
      kind: SpanKind.INTERNAL,
      startTime: new Date(startedAt),
      attributes: attributes({ ...fields, runId }),
    });
  } finally {
    delete g[FORCED_IDS];
  }
  if (failure) markFailed(span, failure);
  span.end(new Date(Math.max(endedAtMs, Date.parse(startedAt))));
}

export { SpanKind };
