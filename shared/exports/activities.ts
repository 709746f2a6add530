import { hashes } from '../personal/policy';
import type { TenantGraphqlClient } from '../graphql/client';
import { callbackReply } from '../webhooks/reply';
import { z } from 'zod';
import type { ExportParts } from './parts';
import type { Host } from '../feature';
import { EXPORT_PARTS } from './feature';
import { exportSummary } from './summary';
import { endRunSpan } from '../telemetry';
import {
  exportInputSchema,
  exportStateSchema,
  streamOutcomeSchema,
  EXPORT_RUN,
  streamTaskSchema,
  type ExportInput,
  type ExportState,
  type StreamOutcome,
  type StreamSlice,
  type StreamTask,
} from './orchestration';
import { exportReply, fileName } from './reply';

/**
 * One slice of a stream to its blob, for up to ACTIVITY_SLICE_SECONDS: the file, or where it stands with more to
 * write. A failure is an outcome (with its message), so the other streams' results stay.
 */
export async function runExportStream(
  setup: ExportParts,
  graphql: TenantGraphqlClient,
  task: StreamTask,
): Promise<StreamSlice> {
  const stream = (await setup.streams()).find((s) => s.name === task.stream);
  if (!stream) return { ok: false, stream: task.stream, error: `stream ${task.stream} is no longer defined` };
  try {
    // Loaded on first use: the writer's parts (graphql's parser, the encoders) are not a registration's cost.
    const { writeSlice } = await import('./slices');
    const outcome = await writeSlice(setup.storage, graphql, stream, task, {
      deadlineMs: setup.clock.now() + setup.sliceSeconds * 1000,
      clock: setup.clock,
      hasher: hashes(stream) ? await setup.hashKey() : undefined,
    });
    if ('more' in outcome) {
      setup.logger.log('info', 'export stream sliced', {
        stream: task.stream,
        records: outcome.more.records,
        count: outcome.more.slice + 1,
      });
      return { ok: true, more: true, ...outcome.more };
    }
    const file = outcome.done;
    setup.logger.log('info', 'export stream written', { stream: task.stream, records: file.records });
    return { ok: true, file };
  } catch (err) {
    setup.logger.log('warn', 'export stream failed', { stream: task.stream, reason: (err as Error).message });
    return { ok: false, stream: task.stream, error: (err as Error).message };
  }
}

/** The manifest (when every stream succeeded), then the tenant's slot is freed whatever happened. */
export async function finishExport(
  setup: ExportParts,
  input: ExportInput,
  outcomes: StreamOutcome[],
  finishedAt: string,
): Promise<{ manifest?: string }> {
  try {
    if (outcomes.length !== input.streams.length || !outcomes.every((o) => o.ok)) return {};
    const files = outcomes.flatMap((o) => (o.ok ? [o.file] : []));
    const manifest = await setup.storage.writeManifest(input.id, {
      id: input.id,
      tenant: input.tenant,
      format: input.format,
      gzip: input.gzip,
      requestedAt: input.requestedAt,
      finishedAt,
      files: files.map(({ stream, name, records, bytes, sha256 }) => ({
        stream,
        file: fileName(name),
        records,
        bytes,
        sha256,
      })),
    });
    return { manifest };
  } finally {
    await setup.slots.releaseSlot(input.tenant, input.id);
  }
}

/** The signed callback: the status body as GET shows it, POSTed the Standard Webhooks way. */
export async function notifyExport(
  setup: ExportParts,
  state: ExportState,
  callbackUrl: string,
): Promise<void> {
  await callbackReply(exportReply(setup), state, callbackUrl, {
    secret: setup.callbackSecret,
    clock: setup.clock,
    development: setup.development,
  });
}

/*
 * The export orchestration's activities (functions/export-*.ts register them under EXPORT's names). Each parses its
 * input — activity inputs and outputs are stored in the durable history: never a link, token or secret — and runs
 * in a span of the export's trace (its run id is the export id).
 */

/**
 * One slice of a stream of an export to its blob, streaming; the outcome (file or error) for the manifest, or that
 * the next slice carries on.
 */
export function exportStreamActivity(app: Host, input: unknown): Promise<StreamSlice> {
  const task = streamTaskSchema.parse(input);
  return app.traced(
    'export stream',
    { runId: task.id, stream: task.stream, slice: task.slice },
    () => runExportStream(app.part(EXPORT_PARTS), app.access().graphql, task),
    // A stream that failed is an outcome (the others go on): its span is marked failed all the same.
    (o) => (o.ok ? undefined : 'export_failed'),
  );
}

const finishInput = z.object({
  input: exportInputSchema,
  outcomes: z.array(streamOutcomeSchema),
  finishedAt: z.string(),
});

/** The summary in the run history, the record the alert reads, and the export's own span. */
async function endExport(
  app: Host,
  input: ExportInput,
  outcomes: StreamOutcome[],
  finishedAt: string,
  error?: string,
) {
  const summary = exportSummary(input, outcomes, finishedAt, error);
  if (summary.outcome === 'failed')
    // An alert rule in infra/ reads this record: its message and fields are part of the contract.
    app.logger.log('warn', EXPORT_RUN.failedRecord, {
      runId: input.id,
      tenant: input.tenant,
      code: 'export_failed',
    });
  await app.runs().save(summary);
  endRunSpan(
    EXPORT_RUN.span,
    input.id,
    input.requestedAt,
    { tenant: input.tenant, kind: 'export', outcome: summary.outcome, count: input.streams.length },
    summary.error?.code,
    Date.parse(finishedAt),
  );
}

/** The export's manifest (when every stream succeeded), its slot freed, and its summary in the run history. */
export async function exportFinishActivity(app: Host, raw: unknown): Promise<{ manifest?: string }> {
  const { input, outcomes, finishedAt } = finishInput.parse(raw);
  return app.traced('export finish', { runId: input.id }, async () => {
    const out = await finishExport(app.part(EXPORT_PARTS), input, outcomes, finishedAt);
    await endExport(app, input, outcomes, finishedAt);
    return out;
  });
}

/** An export that could not finish: its slot freed and its summary failed, with why. */
export async function exportFailActivity(app: Host, raw: unknown): Promise<void> {
  const { input, outcomes, finishedAt, error } = finishInput.extend({ error: z.string() }).parse(raw);
  await app.traced('export fail', { runId: input.id }, async () => {
    await app.part(EXPORT_PARTS).slots.releaseSlot(input.tenant, input.id);
    await endExport(app, input, outcomes, finishedAt, error);
  });
}

const notifyInput = z.object({ state: exportStateSchema, callbackUrl: z.string() });

/** The signed callback. Download links are signed here and sent, never returned — so they stay out of history. */
export async function exportNotifyActivity(app: Host, raw: unknown): Promise<void> {
  const { state, callbackUrl } = notifyInput.parse(raw);
  await app.traced('export callback', { runId: state.id }, () =>
    notifyExport(app.part(EXPORT_PARTS), state, callbackUrl),
  );
}
