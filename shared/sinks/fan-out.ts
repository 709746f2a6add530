import type { ChangeBatch, ChangeSink, RunManifest } from './types';

/** Several sinks as one: a page counts as written when every sink has it. */
export class MultiSink implements ChangeSink {
  readonly description: string;
  constructor(readonly sinks: ChangeSink[]) {
    this.description = sinks.map((s) => s.description).join(' + ');
  }
  async write(batch: ChangeBatch, options?: { abortSignal?: AbortSignal }) {
    await Promise.all(this.sinks.map((s) => s.write(batch, options)));
  }
  async endStream(...args: Parameters<ChangeSink['endStream']>) {
    await Promise.all(this.sinks.map((s) => s.endStream(...args)));
  }
  async finish(manifest: RunManifest) {
    await Promise.all(this.sinks.map((s) => s.finish(manifest)));
  }
}
