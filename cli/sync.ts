import { dirname, join } from 'node:path';
import { createAccessLayer } from '../shared/access';
import { LocalFileSecretStore } from '../shared/secrets';
import { resolveStreams } from '../shared/streams';
import { syncAll } from '../shared/sync/run';
import { sinkFor } from '../shared/sync/sinks';
import { FileSnapshotStore } from '../shared/sync/state';
import { parse } from './args';
import { resolveTenant } from './context';

export const SYNC_USAGE = 'sync [--streams a,b] [--sink dir:PATH] [--full] [--json]   (one sync run)';

/** `tenant-integrations sync`: one run with the sync's own code; progress on stderr (TTY), summary with --json. */
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
    if (target.sandbox)
      await new LocalFileSecretStore(config.localSecretsFile).set(
        config.clientSecretName,
        target.sandbox.clientSecret,
      );
    const select = values.streams ? values.streams.split(',').filter(Boolean) : config.syncStreams;
    const streams = resolveStreams({ select });
    const local = dirname(config.localSecretsFile);
    const sink = sinkFor(values.sink ?? `dir:${join(local, 'sync-out')}`);
    const tty = Boolean(process.stderr.isTTY) && !values.json;
    const access = createAccessLayer(config);
    const result = await syncAll(access.graphql, streams, {
      tenant: config.tenant.name,
      snapshots: new FileSnapshotStore(join(local, 'sync-state')),
      sink,
      full: values.full,
      onPage: tty
        ? (stream, c) =>
            process.stderr.write(
              `\r\x1b[K${stream}: ${c.read} read, ${c.created} created, ${c.updated} updated`,
            )
        : undefined,
    });
    if (tty) process.stderr.write('\r\x1b[K');
    const summary = {
      runId: result.runId,
      ok: result.ok,
      durationMs: result.durationMs,
      sink: sink.description,
      streams: Object.fromEntries(
        result.streams.map((s) => [s.stream, { ...s.counts, ...(s.error ? { error: s.error } : {}) }]),
      ),
    };
    if (values.json) process.stdout.write(`${JSON.stringify(summary)}\n`);
    else
      for (const s of result.streams)
        process.stderr.write(
          `${s.ok ? '✔' : '✖'} ${s.stream}: ${s.counts.read} read, ${s.counts.created} created, ${s.counts.updated} updated, ${s.counts.deleted} deleted, ${s.counts.unchanged} unchanged${s.error ? ` — ${s.error}` : ''}\n`,
        );
    return result.ok ? 0 : 1;
  } finally {
    await target.close();
  }
}
