import { mkdir, appendFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { ConfigError } from '../errors';
import type { Change, StreamCounts } from './changes';

/** Where changes go. A write that throws fails the page; the run's state is not advanced past it. */
export interface ChangeSink {
  readonly description: string;
  write(runId: string, stream: string, changes: Change[]): Promise<void>;
  finish(runId: string, summary: Record<string, StreamCounts>): Promise<void>;
}

/** `dir:PATH`: NDJSON per run and stream, and a manifest with the counts — for the CLI and for looking. */
export class DirectorySink implements ChangeSink {
  readonly description: string;
  constructor(readonly dir: string) {
    this.description = `folder ${dir}`;
  }

  async write(runId: string, stream: string, changes: Change[]): Promise<void> {
    if (!changes.length) return;
    const folder = join(this.dir, runId);
    await mkdir(folder, { recursive: true });
    await appendFile(join(folder, `${stream}.ndjson`), changes.map((c) => `${JSON.stringify(c)}\n`).join(''));
  }

  async finish(runId: string, summary: Record<string, StreamCounts>): Promise<void> {
    const folder = join(this.dir, runId);
    await mkdir(folder, { recursive: true });
    await writeFile(
      join(folder, 'manifest.json'),
      `${JSON.stringify({ runId, streams: summary }, null, 2)}\n`,
    );
  }
}

/** Parses one SYNC_SINKS entry (`dir:PATH` so far; `blob` and `webhook` come with the timer-driven sync). */
export function sinkFor(spec: string, cwd = process.cwd()): ChangeSink {
  if (spec.startsWith('dir:') && spec.length > 4) return new DirectorySink(resolve(cwd, spec.slice(4)));
  throw new ConfigError([`sink "${spec}": use dir:PATH (blob and webhook sinks are not built yet)`]);
}
