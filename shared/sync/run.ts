import { randomUUID } from 'node:crypto';
import { systemClock, type Clock } from '../clock';
import type { TenantGraphqlClient } from '../graphql/client';
import { paginate } from '../graphql/pager';
import type { StreamDefinition } from '../streams';
import { ChangeDetector, type StreamCounts } from './changes';
import type { ChangeSink } from './sinks';
import type { SnapshotStore } from './state';

export interface SyncOptions {
  tenant: string;
  snapshots: SnapshotStore;
  sink: ChangeSink;
  /** Ignore the stored state: every record is delivered as created, and the state is rewritten. */
  full?: boolean;
  runId?: string;
  clock?: Clock;
  abortSignal?: AbortSignal;
  onPage?: (stream: string, counts: StreamCounts) => void;
}

export interface StreamResult {
  stream: string;
  ok: boolean;
  counts: StreamCounts;
  error?: string;
}

/**
 * One pass over one stream: page by page, each page's changes written to the sink before the next is
 * asked for; at the end, deletions, then the new snapshot. Any failure leaves the stored snapshot as it was.
 */
export async function syncStream(
  graphql: TenantGraphqlClient,
  stream: StreamDefinition,
  runId: string,
  options: SyncOptions,
): Promise<StreamResult> {
  const previous = options.full ? undefined : await options.snapshots.get(options.tenant, stream.name);
  const detector = new ChangeDetector(stream.name, previous, stream.idPath);
  try {
    for await (const page of paginate(graphql, stream.document, stream.paths, {
      pageSize: stream.pageSize,
      abortSignal: options.abortSignal,
    })) {
      await options.sink.write(runId, stream.name, detector.page(page.records));
      options.onPage?.(stream.name, detector.counts);
    }
    const { deletions, snapshot } = detector.finish();
    await options.sink.write(runId, stream.name, deletions);
    await options.snapshots.put(options.tenant, stream.name, snapshot);
    return { stream: stream.name, ok: true, counts: detector.counts };
  } catch (err) {
    return { stream: stream.name, ok: false, counts: detector.counts, error: (err as Error).message };
  }
}

/** A whole run: streams in parallel, at most `concurrency` at once; the manifest records every stream. */
export async function syncAll(
  graphql: TenantGraphqlClient,
  streams: StreamDefinition[],
  options: SyncOptions & { concurrency?: number },
): Promise<{ runId: string; ok: boolean; durationMs: number; streams: StreamResult[] }> {
  const clock = options.clock ?? systemClock;
  const started = clock.now();
  const runId =
    options.runId ?? `${new Date(started).toISOString().replace(/[:.]/g, '-')}-${randomUUID().slice(0, 8)}`;
  const results: StreamResult[] = new Array(streams.length);
  let next = 0;
  const worker = async () => {
    while (next < streams.length) {
      const i = next++;
      results[i] = await syncStream(graphql, streams[i], runId, options);
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.concurrency ?? 3, streams.length) }, worker));
  await options.sink.finish(runId, Object.fromEntries(results.map((r) => [r.stream, r.counts])));
  return { runId, ok: results.every((r) => r.ok), durationMs: clock.now() - started, streams: results };
}
