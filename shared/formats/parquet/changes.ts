import { appendFile, open, rename, rm, type FileHandle } from 'node:fs/promises';
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

const LEADING = new Set(['change_id', 'kind', 'id', 'content_hash']);
/** Rows read at a time when a file of changes is written again without one key's (an erasure). */
const ERASE_BATCH = 10_000;

/**
 * A file of changes written again without the changes of `key` (an erasure), beside itself and renamed over it: its
 * rows read back a batch at a time, as the changes they were, and written with the same columns. Answers how many
 * rows went (none: the file is left as it was).
 */
export async function eraseFromChangesParquet(file: string, key: string): Promise<number> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const hp = require('hyparquet') as typeof import('hyparquet');
  const handle = await open(file);
  try {
    return await erasing(hp, handle, file, key);
  } finally {
    await handle.close();
  }
}

async function erasing(
  hp: typeof import('hyparquet'),
  handle: FileHandle,
  file: string,
  key: string,
): Promise<number> {
  const { size } = await handle.stat();
  const buffer = {
    byteLength: size,
    slice: async (start: number, end = size) => {
      const b = Buffer.alloc(end - start);
      await handle.read(b, 0, end - start, start);
      return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;
    },
  };
  const metadata = await hp.parquetMetadataAsync(buffer);
  const total = Number(metadata.num_rows);
  const fields = metadata.schema
    .slice(1)
    .filter((s) => !s.num_children && !LEADING.has(s.name))
    .map((s) => s.name);
  const found = await hp.parquetReadObjects({ file: buffer, metadata, columns: ['id'] });
  const removed = found.filter((r) => r.id === key).length;
  if (!removed) return 0;
  const pages = async function* (): AsyncIterable<Change[]> {
    for (let start = 0; start < total; start += ERASE_BATCH) {
      const rows = await hp.parquetReadObjects({
        file: buffer,
        metadata,
        rowStart: start,
        rowEnd: Math.min(total, start + ERASE_BATCH),
      });
      yield rows
        .filter((r) => r.id !== key)
        .map((r) => {
          const kind = String(r.kind) as Change['kind'];
          const base = { changeId: String(r.change_id), stream: '', kind, id: String(r.id) };
          return kind === 'deleted'
            ? base
            : { ...base, record: Object.fromEntries(fields.map((f) => [f, r[f] ?? null])) };
        });
    }
  };
  await writeChangesParquet(pages, `${file}.tmp`, { stream: 'erase', fields });
  await rename(`${file}.tmp`, file);
  return removed;
}
