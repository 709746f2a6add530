import type { StreamDefinition } from './index';

/**
 * What an incremental pass passes the document (docs/sync.md, "Incremental passes"), by the stream's kind: the time
 * itself (`since`), a filter with "$since" replaced by it (`filter`), or the newest-first ordering (`order`).
 */
export function incrementalVariables(
  incremental: NonNullable<StreamDefinition['incremental']>,
  since: string,
): Record<string, unknown> {
  const kind = incremental.kind ?? 'since';
  const also = incremental.also ?? {};
  if (kind === 'since') return { ...also, [incremental.variable]: since };
  if (kind === 'order') return { ...also, [incremental.variable]: incremental.value };
  // "$since" wherever it stands: a whole value, or inside a search string.
  const fill = (v: unknown): unknown =>
    typeof v === 'string'
      ? v.split('$since').join(since)
      : Array.isArray(v)
        ? v.map(fill)
        : v && typeof v === 'object'
          ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, fill(x)]))
          : v;
  return { ...also, [incremental.variable]: fill(incremental.value) };
}
