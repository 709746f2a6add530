import { appendFile, rm } from 'node:fs/promises';
import { rejectedError, sortOut, type Change, type RejectedPolicy } from '../../changes';
import { writeParquet } from './writer';

/** What a Parquet file of changes does with a record it cannot hold as it is (shared/changes/rejected.ts). */
export interface ChangesParquetOptions {
  stream: string;
  rejected?: RejectedPolicy;
  /** With `quarantine`: where the records set aside go, one JSON line each (`{id, reason, record}`). */
  quarantineFile?: string;
  /** The record keys the stream selects: its columns; a key a record carries beyond them is not one. */
  fields?: readonly string[];
}

/**
 * A sync's changes: `change_id`, `kind`, `id`, `content_hash` (empty for a deletion), then the record's fields. A
 * record whose text UTF-8 cannot hold (a lone surrogate) fails the file naming it, or — with `quarantine` — is left
 * out of it and written to `quarantineFile`. Answers the rows written and the records set aside.
 */
export async function writeChangesParquet(
  pages: () => AsyncIterable<Change[]>,
  file: string,
  options: ChangesParquetOptions,
): Promise<{ rows: number; rejected: number }> {
  let rejected = 0;
  let learning = true;
  const quarantine: string[] = [];
  const flushQuarantine = async () => {
    if (!quarantine.length || !options.quarantineFile) return;
    await appendFile(options.quarantineFile, quarantine.join(''));
    quarantine.length = 0;
  };
  // Both passes see the same records: the first also sets the refused ones aside (or fails on the first of them).
  const storable = async function* () {
    for await (const page of pages()) {
      const { kept, rejected: refused } = sortOut(page, 'parquet');
      if (learning && refused.length) {
        if (options.rejected !== 'quarantine')
          throw rejectedError('Parquet', options.stream, refused[0], refused.length - 1);
        rejected += refused.length;
        for (const r of refused)
          quarantine.push(`${JSON.stringify({ id: r.id, reason: r.reason, record: r.json })}\n`);
        if (quarantine.length >= 1000) await flushQuarantine();
      }
      yield kept;
    }
    if (learning) await flushQuarantine();
    learning = false;
  };
  if (options.quarantineFile) await rm(options.quarantineFile, { force: true });
  const rows = await writeParquet(storable, file, {
    leading: [
      { name: 'change_id', kind: 'STRING', required: true, value: (c) => c.changeId },
      { name: 'kind', kind: 'STRING', required: true, value: (c) => c.kind },
      { name: 'id', kind: 'STRING', required: true, value: (c) => c.id },
      { name: 'content_hash', kind: 'STRING', value: (c) => (c.kind === 'deleted' ? null : c.changeId) },
    ],
    recordOf: (c) => c.record,
    fields: options.fields,
  });
  return { rows, rejected };
}
