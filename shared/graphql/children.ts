import { UpstreamError } from '../errors';
import type { StreamDefinition } from '../streams';
import type { TenantGraphqlClient } from './client';
import { paginate, type Page, type PaginateOptions } from './pager';

/**
 * A child stream's listing (docs/sync.md, "Child streams"): its relation paged for each parent key in turn, every
 * record carrying the parent's key (`parent.as`). One listing of pages, as a root stream's: its position
 * (`endCursor`) is the parent's place and the relation's cursor, `{"p": 12, "c": "…"}`, so a pass that stops resumes
 * with that parent, where its relation stopped. The page size the tenant lowers for one parent holds for the next.
 */
export interface ChildPosition {
  /** The parent's place in the parents' order. */
  p: number;
  /** The relation's cursor within that parent (null: its start). */
  c: string | null;
}

export const parsePosition = (cursor: string | null | undefined): ChildPosition => {
  if (!cursor) return { p: 0, c: null };
  try {
    const v = JSON.parse(cursor) as { p?: unknown; c?: unknown };
    if (Number.isInteger(v.p) && (v.c === null || typeof v.c === 'string'))
      return { p: v.p as number, c: v.c };
  } catch {
    // below
  }
  throw new Error(`not a child stream's position: ${cursor.slice(0, 100)}`);
};

/** How many parents in a row without children before the listing reports where it is (a checkpoint, a slice's end). */
const QUIET_PARENTS = 100;

export async function* paginateChildren(
  client: TenantGraphqlClient,
  stream: StreamDefinition,
  parents: AsyncIterable<unknown>,
  options: PaginateOptions,
): AsyncGenerator<Page> {
  const parent = stream.parent;
  if (!parent) throw new Error(`${stream.name} is not a child stream`);
  const start = parsePosition(options.startCursor);
  let size = options.pageSize;
  let number = 0;
  let quiet = 0;
  let p = -1;
  const iterator = parents[Symbol.asyncIterator]();
  let next = await iterator.next();
  while (!next.done) {
    p++;
    const key = next.value;
    next = await iterator.next();
    if (p < start.p) continue;
    const last = next.done === true;
    const pages = paginate(client, stream, {
      ...options,
      pageSize: size,
      startCursor: p === start.p ? start.c : null,
      variables: { ...options.variables, [parent.variable]: key },
      onPageSize: (n, limit) => {
        size = n;
        options.onPageSize?.(n, limit);
      },
    });
    for await (const page of pages) {
      const records = page.records.map((r) => {
        if (!r || typeof r !== 'object')
          throw new UpstreamError(
            'upstream_malformed',
            client.endpoint,
            `${stream.name}: a record is not an object`,
          );
        return { ...(r as Record<string, unknown>), [parent.as]: key };
      });
      const done = !page.hasNextPage;
      // An empty relation says nothing, unless many in a row: then where the listing is, so it can stop there.
      if (!records.length && done && !(last || ++quiet >= QUIET_PARENTS)) continue;
      quiet = 0;
      const position: ChildPosition = done ? { p: p + 1, c: null } : { p, c: page.endCursor };
      yield {
        number: ++number,
        records,
        endCursor: JSON.stringify(position),
        hasNextPage: !(done && last),
        pageSize: page.pageSize,
      };
    }
  }
  // No parent at all (or none past the position): one empty page, so the listing ends.
  if (number === 0)
    yield {
      number: 1,
      records: [],
      endCursor: JSON.stringify({ p: p + 1, c: null }),
      hasNextPage: false,
      pageSize: size,
    };
}
