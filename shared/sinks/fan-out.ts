import type { ChangeBatch, ChangeSink, RunManifest, WriteOutcome } from './types';

/** A record any sink set aside counts once: the most any one sink set aside. */
const most = (outcomes: Array<WriteOutcome | void>): WriteOutcome | void => {
  const rejected = Math.max(0, ...outcomes.map((o) => o?.rejected ?? 0));
  return rejected ? { rejected } : undefined;
};

/** Several sinks as one: a page counts as written when every sink has it. */
export class MultiSink implements ChangeSink {
  readonly description: string;
  constructor(readonly sinks: ChangeSink[]) {
    this.description = sinks.map((s) => s.description).join(' + ');
  }
  async write(batch: ChangeBatch, options?: { abortSignal?: AbortSignal }) {
    return most(await Promise.all(this.sinks.map((s) => s.write(batch, options))));
  }
  async endStream(...args: Parameters<ChangeSink['endStream']>) {
    return most(await Promise.all(this.sinks.map((s) => s.endStream(...args))));
  }
  async finish(manifest: RunManifest) {
    await Promise.all(this.sinks.map((s) => s.finish(manifest)));
  }
  async close() {
    await Promise.all(this.sinks.map((s) => s.close?.()));
  }
}
