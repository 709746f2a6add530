/*
 * An erasure's kind of run (shared/runs/kind.ts): one record of one stream taken out of the sinks, on request — who
 * asked, which stream and key, and where rows left; never a value of the record.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { Clock } from '../clock';
import { errorText, IntegrationError, bounded } from '../errors';
import type { Logger } from '../log';
import type { RunDetails, RunKind } from '../runs/kind';
import { esc } from '../runs/page';
import { finishedFields, type RunSummary } from '../runs/summary';
import type { EraseOutcome } from '../sinks/erase';
import type { ChangeSink } from '../sinks/types';
import { inSpan } from '../telemetry';

export const eraseDetailsSchema = z.object({
  erase: z.object({
    stream: z.string().max(63),
    key: z.string().max(4096),
    /** Who asked: a name, an address, a ticket — as the request or `--by` said. */
    by: z.string().max(200),
    sinks: z.string().max(2000),
    erased: z.array(z.object({ place: z.string().max(1000), count: z.number().int().min(0) })).max(500),
    unreachable: z.array(z.string().max(1000)).max(50).optional(),
  }),
});
export type EraseDetails = z.infer<typeof eraseDetailsSchema>['erase'];

const detailsOf = (r: RunSummary) => {
  const parsed = eraseDetailsSchema.safeParse(r);
  return parsed.success ? parsed.data.erase : undefined;
};

const ERASE_DETAILS: RunDetails = {
  schema: eraseDetailsSchema,
  html: (r) => {
    const d = detailsOf(r);
    if (!d) return '';
    const rows = d.erased.map((e) => `<li>${esc(e.place)}: ${e.count} removed</li>`).join('');
    const away = (d.unreachable ?? []).map((u) => `<li>not reachable: ${esc(u)}</li>`).join('');
    return `<p>${esc(d.stream)} ${esc(d.key)}, asked by ${esc(d.by)}</p><ul>${rows || '<li>nothing of it was kept</li>'}${away}</ul>`;
  },
};

/** Erasures run in the request (or the CLI) that asks for them: no orchestration works on one. */
export const ERASE_RUN: RunKind = {
  kind: 'erase',
  span: 'erase run',
  failedRecord: 'erase failed',
  instanceId: (run) => `erase-${run.id}`,
  perRun: true,
  details: ERASE_DETAILS,
};

export interface ErasureRequest {
  tenant: string;
  stream: string;
  key: string;
  by: string;
  trigger: 'manual' | 'request';
}

/**
 * Erases the record from `sink`, with the erasure in the run history from its start (so one cut short is still
 * accounted for) to its end: succeeded — the places named, and where the app could not reach — or failed with its
 * code and fix. Answers the summary.
 */
export async function runErasure(
  sink: ChangeSink,
  request: ErasureRequest,
  options: { clock: Clock; logger: Logger; save: (summary: RunSummary) => Promise<void> },
): Promise<RunSummary & { erase: EraseDetails }> {
  const startedAt = new Date(options.clock.now()).toISOString();
  const id = `erase-${startedAt.replace(/[:.]/g, '-')}-${randomUUID().slice(0, 8)}`;
  const base = {
    id,
    kind: ERASE_RUN.kind,
    trigger: request.trigger,
    startedAt,
    erase: { stream: request.stream, key: request.key, by: request.by, sinks: sink.description, erased: [] },
  };
  await options.save({ ...base, outcome: 'running' });
  let outcome: EraseOutcome;
  try {
    outcome = await inSpan('erase run', { runId: id, stream: request.stream }, () =>
      sink.erase(request.tenant, request.stream, request.key),
    );
  } catch (err) {
    const code = err instanceof IntegrationError ? err.code : 'sink_failed';
    const failed = {
      ...base,
      outcome: 'failed' as const,
      ...finishedFields(startedAt, new Date(options.clock.now()).toISOString()),
      error: { code, message: bounded((err as Error).message), action: errorText(code).action },
    };
    await options.save(failed);
    options.logger.log('warn', ERASE_RUN.failedRecord, { runId: id, stream: request.stream, code });
    return failed;
  }
  const done = {
    ...base,
    outcome: 'succeeded' as const,
    ...finishedFields(startedAt, new Date(options.clock.now()).toISOString()),
    erase: {
      ...base.erase,
      erased: outcome.erased,
      ...(outcome.unreachable ? { unreachable: outcome.unreachable } : {}),
    },
  };
  await options.save(done);
  options.logger.log('info', 'erase completed', {
    runId: id,
    stream: request.stream,
    count: outcome.erased.reduce((n, e) => n + e.count, 0),
  });
  return done;
}
