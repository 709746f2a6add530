import { UpstreamError } from '../errors';
import type { TenantGraphqlClient } from './client';

/** Where a Relay connection keeps its parts, as dotted paths. */
export interface ConnectionPaths {
  /** From `data` to the list of edges (or records), e.g. `controls.edges`. */
  records: string;
  /** Inside each edge, the record, e.g. `node`; empty when the list holds records. */
  node: string;
  /** From `data`, e.g. `controls.pageInfo.hasNextPage`. */
  hasNextPage: string;
  /** From `data`, e.g. `controls.pageInfo.endCursor`. */
  endCursor: string;
  pageSizeVariable: string;
  cursorVariable: string;
}

export interface Page {
  /** 1-based. */
  number: number;
  records: unknown[];
  /** The cursor after this page: where a resumed run starts. */
  endCursor: string | null;
  hasNextPage: boolean;
}

export function getPath(value: unknown, path: string): unknown {
  if (!path) return value;
  let v = value;
  for (const key of path.split('.')) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string, unknown>)[key];
  }
  return v;
}

/**
 * Pages through a connection, guarded against the classic loops: a cursor seen before, `hasNextPage`
 * with no cursor, `data: null` or a missing list. Starts after `startCursor` to resume a checkpoint.
 */
export async function* paginate(
  client: TenantGraphqlClient,
  document: string,
  paths: ConnectionPaths,
  options: {
    pageSize: number;
    startCursor?: string | null;
    variables?: Record<string, unknown>;
    abortSignal?: AbortSignal;
    maxPages?: number;
  },
): AsyncGenerator<Page> {
  const seen = new Set<string>();
  let cursor = options.startCursor ?? null;
  if (cursor) seen.add(cursor);
  const malformed = (message: string) => new UpstreamError('upstream_malformed', client.endpoint, message);
  for (let number = 1; number <= (options.maxPages ?? Number.MAX_SAFE_INTEGER); number++) {
    const data = await client.request(document, {
      variables: {
        ...options.variables,
        [paths.pageSizeVariable]: options.pageSize,
        [paths.cursorVariable]: cursor,
      },
      abortSignal: options.abortSignal,
    });
    const list = getPath(data, paths.records);
    if (!Array.isArray(list)) throw malformed(`page ${number}: no list at ${paths.records}`);
    const hasNextPage = getPath(data, paths.hasNextPage);
    if (typeof hasNextPage !== 'boolean')
      throw malformed(`page ${number}: ${paths.hasNextPage} is not a boolean`);
    const endCursor = getPath(data, paths.endCursor);
    if (endCursor !== null && endCursor !== undefined && typeof endCursor !== 'string')
      throw malformed(`page ${number}: ${paths.endCursor} is not a string`);
    const records = paths.node ? list.map((edge) => getPath(edge, paths.node)) : list;
    if (hasNextPage) {
      if (!endCursor) throw malformed(`page ${number}: hasNextPage is true but there is no endCursor`);
      if (seen.has(endCursor)) throw malformed(`page ${number}: cursor repeated; the server is looping`);
      if (list.length === 0) throw malformed(`page ${number}: empty page with hasNextPage true`);
      seen.add(endCursor);
    }
    yield { number, records, endCursor: (endCursor as string | null | undefined) ?? cursor, hasNextPage };
    if (!hasNextPage) return;
    cursor = endCursor as string;
  }
  throw malformed(`more than ${options.maxPages} pages`);
}
