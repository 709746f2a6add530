/**
 * Erasing one record (docs/personal-data.md, "Erasure"): every sink that keeps what it was given removes the key's
 * current row and every change of it, and says where and how many; a sink that cannot reach what it sent (a webhook
 * receiver) says so, for the operator to erase there.
 */
export interface EraseOutcome {
  /** Rows and lines removed, by place (a file, a table); places that held none are not named. */
  erased: Array<{ place: string; count: number }>;
  /** Places the app sent the record and cannot erase it in: the operator's to erase. */
  unreachable?: string[];
}

/**
 * A sync run's folder (dir) or blob prefix, by its name: the run's id, its start time then a suffix
 * (`2026-11-28T10-00-00-000Z-1a2b3c4d`). An erasure rewrites files only there: a folder of the customer's beside the
 * runs, whatever it holds, is not the sink's.
 */
export const isRunFolder = (name: string) => /^\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z-[\w-]+$/.test(name);

/** Several sinks' outcomes as one. */
export const allErased = (outcomes: EraseOutcome[]): EraseOutcome => {
  const unreachable = outcomes.flatMap((o) => o.unreachable ?? []);
  return { erased: outcomes.flatMap((o) => o.erased), ...(unreachable.length ? { unreachable } : {}) };
};

/**
 * NDJSON lines of changes (or of records set aside: `{id, reason, record}`) without those of `key`: each line whose
 * `id` is the key goes; every other line is kept byte for byte.
 */
export function linesWithout(text: string, key: string): { text: string; removed: number } {
  // A line can hold the key only where its JSON text does: the rest are kept without parsing.
  const needle = JSON.stringify(key).slice(1, -1);
  let removed = 0;
  const kept = text.split('\n').filter((line) => {
    if (!line || !line.includes(needle)) return true;
    try {
      if ((JSON.parse(line) as { id?: unknown }).id !== key) return true;
    } catch {
      return true; // not a line of ours: kept as it is
    }
    removed++;
    return false;
  });
  return { text: removed ? kept.join('\n') : text, removed };
}
