import { dirname, join } from 'node:path';
import { createAccessLayer } from '../shared/access';
import { resolveStreams } from '../shared/streams';
import { syncAll } from '../shared/sync/run';
import { sinksFor } from '../shared/sync/sinks';
import { sinkDeps, SYNC_CONCURRENCY } from '../shared/sync/setup';
import { FileSyncStateStore } from '../shared/sync/state';
import { parse } from './args';
import { resolveTenant } from './context';
import { StreamProgress } from './progress';

export const SYNC_USAGE = 'sync [--streams a,b] [--sink dir:PATH] [--full] [--json]   (one sync run)';

/**
 * `tenant-integrations sync`: one run with the timer's own code (state in `.local/sync-state/`, so it never
 * consumes the deployed app's changes). Progress bars on a TTY; `--json` prints the summary; exit 1 on failure.
 */
export async function syncCommand(args: string[]): Promise<number> {
  const { values } = parse(args, {
    streams: { type: 'string' },
    sink: { type: 'string' },
    full: { type: 'boolean' },
    json: { type: 'boolean' },
  });
  const target = await resolveTenant();
  try {
    const { config } = target;
    const select = values.streams ? values.streams.split(',').filter(Boolean) : config.syncStreams;
    const streams = resolveStreams({ file: config.syncStreamsFile, select });
    const local = dirname(config.localSecretsFile);
    const access = createAccessLayer(config);
    const sink = sinksFor(values.sink ?? `dir:${join(local, 'sync-out')}`, sinkDeps(config, access.secrets));
    const progress =
      process.stderr.isTTY && !values.json
        ? new StreamProgress(
            process.stderr,
            streams.map((s) => s.name),
          )
        : undefined;
    progress?.draw();
    const result = await syncAll(access.graphql, streams, {
      tenant: config.tenant.name,
      state: new FileSyncStateStore(join(local, 'sync-state')),
      sink,
      full: values.full,
      concurrency: SYNC_CONCURRENCY,
      onPage: progress && ((stream, counts, expected) => progress.update(stream, counts, expected)),
    });
    for (const s of result.streams)
      progress?.update(s.stream, s.counts, 0, s.ok ? '✔' : `✖ ${s.error ?? ''}`);
    const summary = {
      runId: result.runId,
      resumed: result.resumed,
      ok: result.ok,
      durationMs: result.durationMs,
      sink: sink.description,
      streams: Object.fromEntries(
        result.streams.map((s) => [s.stream, { ...s.counts, ...(s.error ? { error: s.error } : {}) }]),
      ),
    };
    if (values.json) process.stdout.write(`${JSON.stringify(summary)}\n`);
    else if (!progress)
      for (const s of result.streams)
        process.stderr.write(
          `${s.ok ? '✔' : '✖'} ${s.stream}: ${s.counts.read} read, ${s.counts.created} created, ${s.counts.updated} updated, ${s.counts.deleted} deleted, ${s.counts.unchanged} unchanged${s.error ? ` — ${s.error}` : ''}\n`,
        );
    if (!result.ok && !values.json)
      process.stderr.write('The run is incomplete; the next `sync` resumes it from its checkpoint.\n');
    return result.ok ? 0 : 1;
  } finally {
    await target.close();
  }
}
