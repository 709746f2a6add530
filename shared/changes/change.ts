/*
 * The change: what a sync finds and every sink and export delivers. The vocabulary below the sync engine
 * (shared/sync/) and the sinks (shared/sinks/), so neither reaches into the other for it.
 */

export type ChangeKind = 'created' | 'updated' | 'deleted';

const RECORD_JSON = Symbol('recordJson');

/** One change, as every sink delivers it. `record` is absent for deletions. */
export interface Change {
  changeId: string;
  stream: string;
  kind: ChangeKind;
  id: string;
  record?: unknown;
  /** The record's JSON, already made for its fingerprint: sinks reuse it (`changeJson`). Not enumerable. */
  readonly [RECORD_JSON]?: string;
}

/** A change carrying its record's JSON, as the detector makes them (the benches make them the same way). */
export function change(
  stream: string,
  kind: ChangeKind,
  id: string,
  changeId: string,
  record?: unknown,
  json?: string,
) {
  const c: Change =
    record === undefined ? { changeId, stream, kind, id } : { changeId, stream, kind, id, record };
  if (json !== undefined) Object.defineProperty(c, RECORD_JSON, { value: json });
  return c;
}

/** The record's JSON as the change carries it (made once for its fingerprint), or made now. */
export const recordJsonOf = (c: Change): string => c[RECORD_JSON] ?? JSON.stringify(c.record ?? null);

/** A change as one line of JSON, the same as `JSON.stringify(change)`, without serialising the record twice. */
export function changeJson(c: Change): string {
  const json = c[RECORD_JSON];
  if (json === undefined) return JSON.stringify(c);
  return `{"changeId":"${c.changeId}","stream":${JSON.stringify(c.stream)},"kind":"${c.kind}","id":${JSON.stringify(c.id)},"record":${json}}`;
}
