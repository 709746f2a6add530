import * as df from 'durable-functions';
import { z } from 'zod';
import { appContext } from '../shared/app';
import { exportInputSchema, streamOutcomeSchema } from '../shared/exports/orchestration';
import { finishExport } from '../shared/exports/run';
import { actionFor } from '../shared/runs/recorder';

const inputSchema = z.object({
  input: exportInputSchema,
  outcomes: z.array(streamOutcomeSchema),
  finishedAt: z.string(),
});

/** Activity: the export's manifest (when every stream succeeded), and its slot freed for the next export. */
df.app.activity('exportFinish', {
  handler: async (raw: unknown) => {
    const { input, outcomes, finishedAt } = inputSchema.parse(raw);
    const app = appContext();
    const out = await finishExport(app.exports(), input, outcomes, finishedAt);
    const failed = outcomes.find((o) => !o.ok);
    const ok = outcomes.length === input.streams.length && !failed;
    if (!ok)
      // An alert rule in infra/ reads this record: its message and fields are part of the contract.
      app.logger.log('warn', 'export failed', {
        runId: input.id,
        tenant: input.tenant,
        code: 'EXPORT_FAILED',
      });
    await app.runs().save({
      id: input.id,
      kind: 'export',
      trigger: 'request',
      startedAt: input.requestedAt,
      finishedAt,
      durationMs: Math.max(0, Date.parse(finishedAt) - Date.parse(input.requestedAt)),
      outcome: ok ? 'succeeded' : 'failed',
      streams: Object.fromEntries(
        outcomes.map((o) =>
          o.ok
            ? [
                o.file.stream,
                { read: o.file.records, created: 0, updated: 0, deleted: 0, unchanged: 0, ok: true },
              ]
            : [
                o.stream,
                { read: 0, created: 0, updated: 0, deleted: 0, unchanged: 0, ok: false, error: o.error },
              ],
        ),
      ),
      ...(failed && !failed.ok
        ? {
            error: {
              code: 'EXPORT_FAILED',
              message: `${failed.stream}: ${failed.error}`,
              action: actionFor('EXPORT_FAILED'),
            },
          }
        : {}),
      sinks: `${input.format}${input.gzip ? '.gz' : ''} to Blob Storage`,
    });
    return out;
  },
});
