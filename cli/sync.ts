import { dirname, join } from 'node:path';
import { createAccessLayer } from '../shared/access';
import { ConfigError } from '../shared/errors';
import { runCatalog } from '../shared/catalog';
import { streamsOf, syncAll } from '../shared/sync/run-steps';
import { sinksFor } from '../shared/sinks';
import type { ChangeSink } from '../shared/sinks/types';
import { SYNC_CONCURRENCY } from '../shared/sync/parts';
import { CATALOG_SETTINGS } from '../shared/catalog/settings';
import { partOf } from '../shared/config';
import { hashKeyOf } from '../shared/secrets';
import { FileCatalogStore } from '../shared/state/catalog-store';
import { localStateFolder } from '../shared/state/local';
import { FileSyncStateStore } from '../shared/sync/file-state';
import { SYNC_SETTINGS } from '../shared/sync/settings';
import { parse, UsageError } from './args';
import { describeTarget, resolveTenant } from './context';
import { StreamProgress } from './progress';

/**
 * `tenant-integrations sync`: one run with the timer's own code (state in `.local/sync-state/`, so it never
 * consumes the deployed app's changes). Progress bars on a TTY; `--json` prints the summary; exit 1 on failure.
 */
export async function syncCommand(args: string[]): Promise<number> {
  const { values } = parse(args, {
    streams: { type: 'string' },
    sink: { type: 'string' },
    full: { type: 'boolean' },
    'full-pass': { type: 'boolean' },
    json: { type: 'boolean' },
  });
  const target = await resolveTenant();
  let sink: ChangeSink | undefined;
  try {
    const { config } = target;
    const catalogSettings = partOf(config, CATALOG_SETTINGS);
    const select = values.streams ? values.streams.split(',').filter(Boolean) : catalogSettings.streams;
    const local = dirname(config.localSecretsFile);
    const access = createAccessLayer(config);
    const state = new FileSyncStateStore(localStateFolder(config));
    try {
      const context = { config, secrets: access.secrets };
      sink = values.sink
        ? sinksFor(values.sink, context, '--sink')
        : sinksFor(`dir:${join(local, 'sync-out')}`, context);
    } catch (err) {
      if (values.sink && err instanceof ConfigError) throw new UsageError(err.problems.join('; '));
      throw err;
    }
    if (!values.json) describeTarget(target);
    // A missing secret or a rejected credential is one set-up problem, said once, before any run begins
    // (nothing to resume). The token is cached, so the run reuses it.
    await access.m2m.getToken();
    // The catalog as it is now: a new run reads it; an unfinished one resumes its streams, each as it is now.
    const unfinished = values.full ? undefined : await state.readRun(config.tenant.name);
    const catalog = await runCatalog({
      graphql: access.graphql,
      state: new FileCatalogStore(localStateFolder(config)),
      tenant: config.tenant.name,
      streamsFile: catalogSettings.streamsFile,
      select,
      selectFrom: values.streams ? '--streams' : 'SYNC_STREAMS',
      schemaChanges: catalogSettings.schemaChanges,
      maxStreams: catalogSettings.maxStreams,
      personal: catalogSettings.personal.chosen,
      now: Date.now,
    }).catch((err: unknown) => {
      if (values.streams && err instanceof ConfigError) throw new UsageError(err.problems.join('; '));
      throw err;
    });
    const streams = unfinished?.streams ? streamsOf(unfinished) : catalog.streams;
    const progress =
      process.stderr.isTTY && !values.json
        ? new StreamProgress(
            process.stderr,
            streams.map((s) => s.name),
          )
        : undefined;
    progress?.draw();
    const result = await syncAll(access.graphql, async () => catalog, {
      tenant: config.tenant.name,
      state,
      sink,
      full: values.full,
      fullPass: values['full-pass'],
      passes: partOf(config, SYNC_SETTINGS).passes,
      hashKey: hashKeyOf(access.sessionSecrets, catalogSettings.personal.hashSecretName),
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
      ...(result.schema ? { schema: result.schema } : {}),
      streams: Object.fromEntries(
        result.streams.map((s) => [
          s.stream,
          {
            ...s.counts,
            ...(s.pass ? { pass: s.pass } : {}),
            ...(s.pageSize ? { pageSize: s.pageSize } : {}),
            ...(s.orderNotKept ? { orderNotKept: true } : {}),
            ...(s.error ? { error: s.error } : {}),
            ...(s.errorCode ? { errorCode: s.errorCode } : {}),
          },
        ]),
      ),
    };
    if (values.json) {
      process.stdout.write(`${JSON.stringify(summary)}\n`);
      return result.ok ? 0 : 1;
    }
    // Which kind of pass, for the streams that have two kinds (those with an incremental argument).
    const incremental = new Set(streams.filter((s) => s.incremental).map((s) => s.name));
    const kindOf = (s: (typeof result.streams)[number]) =>
      s.pass === 'incremental' ? ' (incremental)' : s.pass && incremental.has(s.stream) ? ' (full pass)' : '';
    if (!progress)
      for (const s of result.streams)
        process.stderr.write(
          `${s.ok ? '✔' : '✖'} ${s.stream}${kindOf(s)}: ${s.counts.read} read, ${s.counts.created} created, ${s.counts.updated} updated, ${s.counts.deleted} deleted, ${s.counts.unchanged} unchanged${s.counts.duplicates ? `, ${s.counts.duplicates} identical records once` : ''}${s.error ? ` — ${s.error}` : ''}\n`,
        );
    // Told with or without the progress display: the tenant refused the stream's own page size.
    for (const s of result.streams)
      if (s.pageSize)
        process.stderr.write(`ℹ ${s.stream}: page size lowered to ${s.pageSize.size}: ${s.pageSize.limit}\n`);
    for (const s of result.streams)
      if (s.orderNotKept)
        process.stderr.write(
          `ℹ ${s.stream}: the tenant did not list it newest first as asked: this pass read it to the end, and the next one reads it whole\n`,
        );
    for (const [stream, fields] of Object.entries(result.schema?.added ?? {}))
      process.stderr.write(
        `ℹ ${stream}: the tenant has fields this stream does not read: ${fields.join(', ')} (\`discover\` proposes them; SYNC_SCHEMA_CHANGES=propagate takes them)\n`,
      );
    for (const c of result.schema?.changes ?? [])
      process.stderr.write(
        `ℹ ${c.stream}: adopted the tenant's schema changes${c.added.length ? ` — now reads ${c.added.join(', ')}` : ''}${c.removed.length ? ` — no longer reads ${c.removed.join(', ')}` : ''}\n`,
      );
    process.stderr.write(
      `Run ${result.runId}${result.resumed ? ' (resumed)' : ''}: changes in ${sink.description}.\n`,
    );
    if (!result.ok)
      process.stderr.write('The run is incomplete; the next `sync` resumes it from its checkpoint.\n');
    return result.ok ? 0 : 1;
  } finally {
    await sink?.close?.();
    await target.close();
  }
}
