import { noCounts } from '../changes';
import type { StreamResult } from './context';

/**
 * The order a run reads its streams in: a child stream (docs/sync.md, "Child streams") only once its parent stream
 * has completed its pass in the same run — its parents are that pass's records — and, where the parent did not
 * complete, not at all: it fails saying so. A parent outside the run (SYNC_STREAMS names only the child) is read as
 * its last completed pass stored it. Deterministic: the orchestrator decides with it too.
 */
export type Readiness = 'ready' | 'wait' | StreamResult;

/**
 * A stream that can never start: its parent never completes. A streams file cannot say so (a child's parent is
 * never a child: shared/streams/index.ts), so this guards the loops that wait on readiness against waiting forever.
 */
export const neverReady = (stream: string): StreamResult => ({
  stream,
  ok: false,
  done: false,
  counts: noCounts(),
  error: `stream ${stream}: its parent never completes (the streams' parents form a circle)`,
  errorCode: 'parent_unavailable',
});

export function readiness(
  stream: string,
  parents: Record<string, string | undefined>,
  results: Record<string, Pick<StreamResult, 'ok' | 'done'> | undefined>,
  inRun: ReadonlySet<string>,
): Readiness {
  const parent = parents[stream];
  if (!parent || !inRun.has(parent)) return 'ready';
  const r = results[parent];
  if (!r || (r.ok && !r.done)) return 'wait';
  if (r.ok) return 'ready';
  return {
    stream,
    ok: false,
    done: false,
    counts: noCounts(),
    error: `stream ${stream}: its parent stream ${parent} did not complete this run, so its records are not read`,
    errorCode: 'parent_unavailable',
  };
}
