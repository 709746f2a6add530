import {
  isGrouping,
  type ChangeBatch,
  type ChangeSink,
  type GroupingSink,
  type RunManifest,
  type WriteOutcome,
} from './types';
import { allErased } from './erase';

/** A record any sink set aside counts once: the most any one sink set aside. */
const most = (outcomes: Array<WriteOutcome | void>): WriteOutcome | void => {
  const rejected = Math.max(0, ...outcomes.map((o) => o?.rejected ?? 0));
  // Held when any sink holds the page: it counts as written only when every sink has stored it.
  const holding = outcomes.filter((o) => o?.held) as WriteOutcome[];
  if (!holding.length) return rejected ? { rejected } : undefined;
  // Stored through a page only as far as every sink that holds pages has stored them.
  const stored = holding.every((o) => o.stored)
    ? {
        throughPage: Math.min(...holding.map((o) => o.stored?.throughPage ?? 0)),
        rejected: Math.max(...holding.map((o) => o.stored?.rejected ?? 0)),
      }
    : undefined;
  return { rejected, held: true, ...(stored ? { stored } : {}) };
};

/**
 * Several sinks as one: a page counts as written when every sink has it. It groups (holds pages) as its grouping
 * members do: `hold` reaches them, `flush` and `drop` only them.
 */
export class MultiSink implements GroupingSink {
  readonly groups = true as const;
  readonly description: string;
  constructor(readonly sinks: ChangeSink[]) {
    this.description = sinks.map((s) => s.description).join(' + ');
  }
  async write(batch: ChangeBatch, options?: { abortSignal?: AbortSignal; hold?: boolean }) {
    const plain = { abortSignal: options?.abortSignal };
    return most(
      await Promise.all(
        this.sinks.map((s) => (isGrouping(s) ? s.write(batch, options) : s.write(batch, plain))),
      ),
    );
  }
  async flush(runId: string, stream: string) {
    return most(await Promise.all(this.sinks.filter(isGrouping).map((s) => s.flush(runId, stream))));
  }
  drop(runId: string, stream: string) {
    for (const s of this.sinks.filter(isGrouping)) s.drop(runId, stream);
  }
  async endStream(...args: Parameters<ChangeSink['endStream']>) {
    return most(await Promise.all(this.sinks.map((s) => s.endStream(...args))));
  }
  async finish(manifest: RunManifest) {
    await Promise.all(this.sinks.map((s) => s.finish(manifest)));
  }
  async close() {
    await Promise.all(this.sinks.map((s) => s.close()));
  }
  async erase(...args: Parameters<ChangeSink['erase']>) {
    return allErased(await Promise.all(this.sinks.map((s) => s.erase(...args))));
  }
  names(stream: string) {
    return this.sinks.flatMap((s) => s.names(stream));
  }
  get ownNames() {
    return this.sinks.flatMap((s) => s.ownNames);
  }
}
