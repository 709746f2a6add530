import { createReadStream, createWriteStream, existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { once } from 'node:events';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { partOf } from '../config';
import { SINK_OUTPUT, type SyncFormat } from './output';
import type { Change, RejectedPolicy, StreamCounts } from '../changes';
import { ndjson, pageName, parquet } from './ndjson';
import type { ChangeBatch, ChangeSink, RunManifest, SinkModule, WriteOutcome } from './types';
import { isRunFolder, linesWithout, type EraseOutcome } from './erase';
import { jsonPages } from '../formats/lines';

/** `dir:PATH`: `{runId}/{stream}.ndjson` and `{runId}/manifest.json` — for the CLI and for looking. */
export class DirectorySink implements ChangeSink {
  readonly description: string;
  constructor(
    readonly dir: string,
    readonly format: SyncFormat = 'ndjson',
    readonly rejected: RejectedPolicy = 'fail',
  ) {
    this.description = `folder ${dir}${format === 'parquet' ? ' (Parquet)' : ''}`;
  }

  private parts(runId: string, stream: string) {
    return join(this.dir, runId, `${stream}.parts`);
  }

  async write(batch: ChangeBatch): Promise<void> {
    const parts = this.parts(batch.runId, batch.stream);
    await mkdir(parts, { recursive: true });
    await writeFile(join(parts, `${pageName(batch.page)}.ndjson`), ndjson(batch.changes));
  }

  async endStream(
    _tenant: string,
    runId: string,
    stream: string,
    changedPages: number[],
    _counts?: StreamCounts,
    options: { fields?: readonly string[] } = {},
  ): Promise<WriteOutcome | void> {
    const parts = this.parts(runId, stream);
    if (this.format === 'parquet') {
      // `{stream}.parquet` from the page files, one page in memory at a time (the writer reads them twice).
      await mkdir(join(this.dir, runId), { recursive: true });
      const pages = async function* () {
        for (const page of changedPages)
          yield* jsonPages<Change>(
            (await readFile(join(parts, `${pageName(page)}.ndjson`), 'utf8')).split('\n'),
            Number.MAX_SAFE_INTEGER,
          );
      };
      const { rejected } = await parquet().writeChangesParquet(
        pages,
        join(this.dir, runId, `${stream}.parquet`),
        {
          stream,
          rejected: this.rejected,
          quarantineFile: join(this.dir, runId, `${stream}.quarantine.ndjson`),
          fields: options.fields,
        },
      );
      await rm(parts, { recursive: true, force: true });
      return { rejected };
    }
    const file = join(this.dir, runId, `${stream}.ndjson`);
    // Ended before (a resumed run repeating the end of a stream whose parts are already joined): nothing to do.
    if (!existsSync(parts) && existsSync(file)) return;
    await mkdir(join(this.dir, runId), { recursive: true });
    // The page files streamed one after the other into a temporary file, renamed when whole: memory stays at a
    // buffer whatever the stream's size.
    const out = createWriteStream(`${file}.tmp`);
    try {
      for (const page of changedPages)
        for await (const chunk of createReadStream(join(parts, `${pageName(page)}.ndjson`)))
          if (!out.write(chunk)) await once(out, 'drain');
      await new Promise<void>((done, fail) => out.end((err?: Error | null) => (err ? fail(err) : done())));
    } catch (err) {
      out.destroy();
      throw err;
    }
    await rename(`${file}.tmp`, file);
    await rm(parts, { recursive: true, force: true });
  }

  /** Nothing held open: its clients close with the process. */
  async close(): Promise<void> {}

  /**
   * Every run's file of the stream without the key's changes (and its pages not yet joined, and what was set aside):
   * each file written again beside itself and renamed over it. A Parquet file is read and written again whole.
   */
  async erase(
    _tenant: string,
    stream: string,
    key: string,
    _options?: { abortSignal?: AbortSignal },
  ): Promise<EraseOutcome> {
    const erased: EraseOutcome['erased'] = [];
    const runs = await readdir(this.dir, { withFileTypes: true }).catch(() => []);
    for (const run of runs
      .filter((d) => d.isDirectory() && isRunFolder(d.name))
      .map((d) => join(this.dir, d.name))) {
      const parts = join(run, `${stream}.parts`);
      const files = [
        join(run, `${stream}.ndjson`),
        join(run, `${stream}.quarantine.ndjson`),
        ...(await readdir(parts).catch(() => [] as string[])).map((f) => join(parts, f)),
      ];
      for (const file of files) {
        const text = await readFile(file, 'utf8').catch(() => undefined);
        if (text === undefined) continue;
        const left = linesWithout(text, key);
        if (!left.removed) continue;
        await writeFile(`${file}.tmp`, left.text);
        await rename(`${file}.tmp`, file);
        erased.push({ place: file, count: left.removed });
      }
      const table = join(run, `${stream}.parquet`);
      if (existsSync(table)) {
        const removed = await parquet().eraseFromChangesParquet(table, key);
        if (removed) erased.push({ place: table, count: removed });
      }
    }
    return { erased };
  }

  /** `{runId}/{stream}.ndjson` (or `.parquet`, `.parts/`, `.quarantine.ndjson`): the stream's name, as a folder holds it. */
  names(stream: string): string[] {
    return [`${this.description}/${stream}`];
  }

  readonly ownNames: readonly string[] = [];

  async finish(manifest: RunManifest): Promise<void> {
    await mkdir(join(this.dir, manifest.runId), { recursive: true });
    await writeFile(
      join(this.dir, manifest.runId, 'manifest.json'),
      `${JSON.stringify(manifest, null, 2)}\n`,
    );
  }
}

/** The folder a `dir:` or `delta:` entry names, relative ones against `cwd` (default: the process's working folder). */
export const folderOf = (argument: string | undefined, cwd?: string) =>
  resolve(cwd ?? process.cwd(), argument ?? '');

export const dirSink: SinkModule = {
  kind: 'dir',
  usage: 'dir:PATH',
  argument: z.string({ error: 'needs a folder: dir:PATH' }).min(1, 'needs a folder: dir:PATH'),
  requires: (_spec, settings) =>
    settings.hosted
      ? 'the dir sink writes to a folder of this machine, and in Azure the app runs from a read-only package: use blob, webhook or postgres there'
      : undefined,
  create: (spec, context) =>
    new DirectorySink(
      folderOf(spec.argument, context.cwd),
      partOf(context.config, SINK_OUTPUT).format,
      partOf(context.config, SINK_OUTPUT).rejectedRecords,
    ),
  async doctor(spec, context) {
    const dir = folderOf(spec.argument, context.cwd);
    await mkdir(dir, { recursive: true });
    const probe = join(dir, `.doctor-${process.pid}`);
    await writeFile(probe, '');
    await rm(probe);
    return { state: 'ok', found: `${dir} is writable` };
  },
};
