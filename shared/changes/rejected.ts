import { IntegrationError } from '../errors';
import { recordJsonOf, type Change } from './change';

/**
 * Records a sink cannot store as they are — one poison record must not stop a stream for good. With
 * SYNC_REJECTED_RECORDS=fail (the default) the page fails naming the record and why; with `quarantine` the record is
 * set aside with its reason (PostgreSQL: the `_quarantine` table; Parquet: `{stream}.quarantine.ndjson` beside the
 * change files), counted in the run summary, and the stream goes on.
 */
export type RejectedPolicy = 'fail' | 'quarantine';

export interface RejectedRecord {
  id: string;
  reason: string;
  /** The record as JSON text, every character that made it unstorable escaped: storable anywhere. */
  json: string;
}

// An escape in JSON text that is not itself escaped: an even number of backslashes before it.
const UNESCAPED = String.raw`(?:^|[^\\])(?:\\\\)*\\`;
const NUL_ESCAPE = new RegExp(`${UNESCAPED}u0000`);
// JSON.stringify writes a lone surrogate as an escape (a paired one as the character itself).
const LONE_SURROGATE_ESCAPE = new RegExp(`${UNESCAPED}ud[89a-f][0-9a-f]{2}`, 'i');
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * Why a store cannot take this change, or undefined: NUL characters (PostgreSQL's text and jsonb) and lone UTF-16
 * surrogates (not Unicode: jsonb refuses them, UTF-8 text — Parquet's strings — would silently replace them).
 */
export function unstorable(change: Change, store: 'postgres' | 'parquet'): string | undefined {
  if (store === 'postgres' && change.id.includes('\0'))
    return 'its id holds a NUL character, which PostgreSQL text cannot store';
  if (LONE_SURROGATE.test(change.id)) return 'its id holds a lone UTF-16 surrogate, which is not Unicode';
  if (change.kind === 'deleted') return undefined;
  const json = recordJsonOf(change);
  if (!json.includes('\\u')) return undefined; // both below are escapes: most records have none
  if (store === 'postgres' && NUL_ESCAPE.test(json))
    return 'a field holds a NUL character (\\u0000), which PostgreSQL cannot store';
  if (LONE_SURROGATE_ESCAPE.test(json))
    return 'a field holds a lone UTF-16 surrogate, which is not Unicode (PostgreSQL refuses it; UTF-8 cannot hold it)';
  return undefined;
}

/** Splits a page into what the store takes and what it cannot, each rejected one with its reason. */
export function sortOut(changes: Change[], store: 'postgres' | 'parquet') {
  const kept: Change[] = [];
  const rejected: RejectedRecord[] = [];
  for (const c of changes) {
    const reason = unstorable(c, store);
    if (reason) rejected.push({ id: c.id, reason, json: c.kind === 'deleted' ? 'null' : recordJsonOf(c) });
    else kept.push(c);
  }
  return { kept, rejected };
}

/** How a record's id is shown: as JSON (a NUL or lone surrogate stays visible and harmless), at most 200 characters. */
export const shownId = (id: string) => {
  const shown = JSON.stringify(id);
  return shown.length > 200 ? `${shown.slice(0, 199)}…"` : shown;
};

/** The error of `fail`: the stream, the record and why — and the setting that lets the stream go on. */
export function rejectedError(
  where: string,
  stream: string,
  record: RejectedRecord,
  others: number,
): IntegrationError {
  return new IntegrationError(
    'sink_rejected',
    `${where} cannot store stream ${stream} record ${shownId(record.id)}: ${record.reason}${others ? ` (and ${others} more in the page)` : ''}. Nothing of the page was applied; the run resumes from it once the record is fixed at the source, or set SYNC_REJECTED_RECORDS=quarantine to set such records aside and go on.`,
    { status: 502 },
  );
}
