import type { PoolClient } from 'pg';
import { recordJsonOf, type Change } from '../../changes';

/** COPY FROM STDIN in PostgreSQL's text format: how new records go into a stream's table in one statement. */
/** PostgreSQL's unique_violation: COPY met a record the table has. */
export const UNIQUE_VIOLATION = '23505';

/** COPY's text format: a backslash, tab, newline or carriage return in a value is escaped. */
const copyText = (s: string) => (/[\\\t\n\r]/.test(s) ? s.replace(/[\\\t\n\r]/g, copyEscape) : s);
const copyEscape = (ch: string) => (ch === '\\' ? '\\\\' : ch === '\t' ? '\\t' : ch === '\n' ? '\\n' : '\\r');

/** New records into the stream's table by COPY, in chunks of lines (the driver loads on first use, like pg). */
export async function copyRows(client: PoolClient, table: string, changes: Change[], runId: string) {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { from } = require('pg-copy-streams') as typeof import('pg-copy-streams');
  const { pipeline } = await import('node:stream/promises');
  const { Readable } = await import('node:stream');
  // `now` is timestamptz's input for the transaction's start: the time the upsert's now() gives its rows.
  const tail = `\tnow\t${copyText(runId)}\n`;
  function* chunks() {
    for (let i = 0; i < changes.length; i += 256) {
      let chunk = '';
      for (const c of changes.slice(i, i + 256))
        chunk += `${copyText(c.id)}\t${copyText(recordJsonOf(c))}\t${c.changeId}${tail}`;
      yield chunk;
    }
  }
  await pipeline(
    Readable.from(chunks()),
    client.query(from(`COPY ${table} (id, record, content_hash, synced_at, run_id) FROM STDIN`)),
  );
}
