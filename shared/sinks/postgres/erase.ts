import type { Pool } from 'pg';
import type { EraseOutcome } from '../erase';
import { ident, SINK_QUARANTINE_TABLE } from './names';

/**
 * One record erased from the postgres sink (../erase.ts): its row in the stream's table — the sink keeps the current
 * record only, no history — and what was set aside of it, in one transaction. Tables not made yet hold nothing.
 * VACUUM (autovacuum) then frees the dead row's space; until it runs the old row version stays in the table's pages.
 */
export async function erasePostgres(
  pool: Pool,
  schema: string,
  stream: string,
  key: string,
  description: string,
): Promise<EraseOutcome> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const exists = async (table: string) =>
      (
        await client.query<{ t: string | null }>('SELECT to_regclass($1) AS t', [
          `${ident(schema)}.${ident(table)}`,
        ])
      ).rows[0]?.t !== null;
    const erased: EraseOutcome['erased'] = [];
    if (await exists(stream)) {
      const r = await client.query(`DELETE FROM ${ident(schema)}.${ident(stream)} WHERE id = $1`, [key]);
      if (r.rowCount) erased.push({ place: `${description}.${stream}`, count: r.rowCount });
    }
    if (await exists(SINK_QUARANTINE_TABLE)) {
      const r = await client.query(
        `DELETE FROM ${ident(schema)}.${ident(SINK_QUARANTINE_TABLE)} WHERE stream = $1 AND record_id = $2`,
        [stream, key],
      );
      if (r.rowCount) erased.push({ place: `${description}.${SINK_QUARANTINE_TABLE}`, count: r.rowCount });
    }
    await client.query('COMMIT');
    return { erased };
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}
