/*
 * A run's staged pages of a stream, read back at the stream's end: each page's changes as the sync wrote them, with
 * the line each came from (the changes table keeps the record's JSON as it is, not serialised again). Read in place
 * from a folder; from Blob Storage, once into a scratch folder and from there on every later pass.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { rejectedError, unstorable, type Change, type RejectedPolicy } from '../../changes';
import { IntegrationError } from '../../errors';
import { pageName } from '../ndjson';
import type { DeltaStore } from './store';

/** A change and its line of the staged page. */
export interface StagedChange {
  change: Change;
  line: string;
}

/**
 * The record's JSON as the line holds it: the text after `"record":`, the change's last key (`changeJson` writes it
 * last, and `JSON.stringify` of a change made by `change()` too), or null for a deletion.
 */
export function recordText(s: StagedChange): string | null {
  const { change: c, line } = s;
  if (c.kind === 'deleted') return null;
  let last: string | undefined;
  for (last in c);
  // The first `,"record":` is the change's own key: the keys before it hold strings, where a `"` is always escaped.
  const at = last === 'record' ? line.indexOf(',"record":') : -1;
  // Not last (a change written some other way): serialised again, which is what it would have been.
  if (at < 0 || !line.endsWith('}')) return JSON.stringify(c.record ?? null);
  return line.slice(at + 10, -1);
}

export class StagedRun {
  /** Records set aside (SYNC_REJECTED_RECORDS=quarantine), as `{id, reason, record}` lines, each once. */
  readonly quarantine = new Set<string>();
  private passes = 0;

  constructor(
    private readonly store: DeltaStore,
    private readonly stream: string,
    /** The run's staging folder under the store (names.ts, `stagingOf`). */
    private readonly folder: string,
    private readonly pages: readonly number[],
    private readonly scratch: string,
    private readonly rejected: RejectedPolicy,
  ) {}

  private async bytesOf(page: number): Promise<Buffer> {
    const path = `${this.folder}/${pageName(page)}.ndjson`;
    const local = this.store.localPath(path);
    let bytes: Buffer | undefined;
    if (local) bytes = await readFile(local).catch(() => undefined);
    else {
      const copy = join(this.scratch, `page-${pageName(page)}.ndjson`);
      bytes = await readFile(copy).catch(() => undefined);
      if (!bytes) {
        bytes = await this.store.read(path);
        if (bytes) await writeFile(copy, bytes);
      }
    }
    if (!bytes)
      throw new IntegrationError(
        'sink_failed',
        `Delta table ${this.stream}: page ${page} is not in ${this.store.description}/${this.folder} (removed while the run was in flight?); start the stream over with \`tenant-integrations sync --full\``,
      );
    return bytes;
  }

  /**
   * The run's changes a page at a time, in order, without those no Parquet file can hold (a lone surrogate): the
   * first pass fails on the first of them (SYNC_REJECTED_RECORDS=fail) or sets them aside; every pass leaves them out.
   */
  async *changes(): AsyncIterable<StagedChange[]> {
    const first = this.passes++ === 0;
    for (const page of this.pages) {
      const kept: StagedChange[] = [];
      for (const line of (await this.bytesOf(page)).toString('utf8').split('\n')) {
        if (!line) continue;
        const change = JSON.parse(line) as Change;
        // Both reasons a record is refused are escapes in its JSON text (unstorable): a line without one has none.
        const reason = line.includes('\\u') ? unstorable(change, 'parquet') : undefined;
        if (!reason) {
          kept.push({ change, line });
          continue;
        }
        if (!first) continue;
        const json = change.kind === 'deleted' ? 'null' : JSON.stringify(change.record ?? null);
        const record = { id: change.id, reason, json };
        if (this.rejected !== 'quarantine') throw rejectedError('Delta', this.stream, record, 0);
        this.quarantine.add(JSON.stringify({ id: record.id, reason, record: json }));
      }
      yield kept;
    }
  }
}
