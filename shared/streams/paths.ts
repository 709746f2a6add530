/**
 * Dotted paths into a GraphQL answer or a record (`controls.pageInfo.endCursor`, `owner.id`): how a stream's
 * definition names where things are.
 */

/** The value at a dotted path; undefined where the path leads nowhere. */
export function getPath(value: unknown, path: string): unknown {
  return pathGetter(path)(value);
}

/**
 * `getPath` for one path, split once: what runs per record or per cell (an id, a node, a CSV column) takes this.
 */
export function pathGetter(path: string): (value: unknown) => unknown {
  if (!path) return (value) => value;
  const keys = path.split('.');
  return (value) => {
    let v = value;
    for (const key of keys) {
      if (v === null || typeof v !== 'object') return undefined;
      v = (v as Record<string, unknown>)[key];
    }
    return v;
  };
}

const keyPart = (v: unknown) => (typeof v === 'string' && v !== '') || typeof v === 'number';

/**
 * A record's key as text, from its key paths (the stream's `keyPaths`): one path's value as it is; several as the
 * JSON array of their values (`["k1","2026-01"]`), the same on every read. Undefined where a part is missing or is
 * not a string or number. No paths: the record has no key (it is known by its content).
 */
export function keyGetter(paths: string[]): (record: unknown) => string | undefined {
  const getters = paths.map(pathGetter);
  if (getters.length === 1) {
    const [get] = getters;
    return (record) => {
      const v = get(record);
      return keyPart(v) ? String(v) : undefined;
    };
  }
  return (record) => {
    const parts = getters.map((get) => get(record));
    return parts.length && parts.every(keyPart) ? JSON.stringify(parts) : undefined;
  };
}
