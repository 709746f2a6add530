import { UpstreamError } from '../errors';
import type { StreamDefinition } from '../streams';
import type { TenantGraphqlClient } from './client';
import { sizeRefusal } from './limits';
import { getPath, pathGetter } from '../streams/paths';

export interface Page {
  /** 1-based. */
  number: number;
  records: unknown[];
  /**
   * Where the next page starts: the connection's cursor, or (offset and page pagination) the next offset or page
   * number as text — what a checkpoint stores and a resumed pass starts from. Null at the start.
   */
  endCursor: string | null;
  hasNextPage: boolean;
  /** How many records the answer says the collection holds, when it says (a total, a count, a connection's). */
  total?: number;
  /** The page size this page was asked with: lower than asked when the tenant refused a page as too costly. */
  pageSize: number;
}

export interface PaginateOptions {
  pageSize: number;
  /** A checkpoint's `endCursor`: the pass resumes after it. */
  startCursor?: string | null;
  /** More variables for every page (an incremental pass's "changed since"). */
  variables?: Record<string, unknown>;
  abortSignal?: AbortSignal;
  maxPages?: number;
  /**
   * The tenant refused a page as too costly (complexity, cost, size: shared/graphql/limits.ts) and the page is asked
   * again with `pageSize` records, for the rest of the listing; `limit` names which limit.
   */
  onPageSize?: (pageSize: number, limit: string) => void;
}

/**
 * Pages through a stream's collection, whatever its pagination, guarded against the classic loops: a cursor seen
 * before, `hasNextPage` with no cursor, `data: null` or a missing list, an empty page that says more follow.
 *
 * Offset and page pagination without a total or a has-more flag stop at the first empty page — never at a short
 * one, as a server that caps the page size answers short pages before its last (one request more per pass).
 */
export async function* paginate(
  client: TenantGraphqlClient,
  stream: StreamDefinition,
  options: PaginateOptions,
): AsyncGenerator<Page> {
  const malformed = (message: string) =>
    new UpstreamError('upstream_malformed', client.endpoint, `${stream.name}: ${message}`);
  const maxPages = options.maxPages ?? Number.MAX_SAFE_INTEGER;
  const ask = (variables: Record<string, unknown>) =>
    client.request(stream.document, {
      variables: { ...options.variables, ...variables },
      abortSignal: options.abortSignal,
    });
  let size = options.pageSize;
  /**
   * One page, asked again with fewer records while the tenant refuses it as too costly — down to 1, then the stream
   * fails naming the limit. `realign` says which size to take instead of the one the refusal allows, and moves the
   * listing's position to match (page numbers count pages of the old size).
   */
  const sized = async (
    variables: (pageSize: number) => Record<string, unknown>,
    realign: (from: number, to: number) => number = (_, to) => to,
  ) => {
    for (;;) {
      try {
        return await ask(variables(size));
      } catch (err) {
        const refusal = sizeRefusal(err, size);
        if (!refusal) throw err;
        if (refusal.next < 1 || stream.pagination === 'none')
          throw new UpstreamError(
            'tenant_limit',
            client.endpoint,
            `${stream.name}: the tenant refuses ${stream.pagination === 'none' ? 'its one answer' : `a page of ${size} record${size === 1 ? '' : 's'}`} (${refusal.reason})`,
            { cause: err },
          );
        size = realign(size, refusal.next);
        options.onPageSize?.(size, refusal.limit);
      }
    }
  };
  const node = stream.paths.node ? pathGetter(stream.paths.node) : undefined;
  const listOf = (data: unknown, number: number) => {
    const list = getPath(data, stream.paths.records);
    if (!Array.isArray(list)) throw malformed(`page ${number}: no list at ${stream.paths.records}`);
    return node ? list.map(node) : list;
  };
  const count = (data: unknown, path: string | undefined, number: number) => {
    if (!path) return undefined;
    const n = getPath(data, path);
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 0)
      throw malformed(`page ${number}: ${path} is not a count`);
    return n;
  };

  switch (stream.pagination) {
    case 'none': {
      if (options.startCursor) return; // the one answer was delivered before the pass stopped
      const data = await sized(() => ({}));
      const records = listOf(data, 1);
      const total = count(data, stream.paths.total, 1);
      yield {
        number: 1,
        records,
        endCursor: 'end',
        hasNextPage: false,
        ...(total !== undefined ? { total } : {}),
        pageSize: size,
      };
      return;
    }
    case 'cursor': {
      const p = stream.paths;
      const seen = new Set<string>();
      let cursor = options.startCursor ?? null;
      if (cursor) seen.add(cursor);
      for (let number = 1; number <= maxPages; number++) {
        // The total, where the document asks it only when told to: on a pass's first page (once a pass).
        const withTotal = p.totalVariable && !options.startCursor && number === 1;
        const data = await sized((n) => ({
          [p.pageSizeVariable]: n,
          [p.cursorVariable]: cursor,
          ...(p.totalVariable ? { [p.totalVariable]: Boolean(withTotal) } : {}),
        }));
        const records = listOf(data, number);
        const total = p.total && (withTotal || !p.totalVariable) ? count(data, p.total, number) : undefined;
        // Without `hasNextPage`, only an empty page ends the list: a short one may be a cap, or (a server that proved
        // otherwise at discovery) a page filtered short — one request more a pass, never a record lost.
        const hasNextPage = p.hasNextPage ? getPath(data, p.hasNextPage) : records.length > 0;
        if (typeof hasNextPage !== 'boolean')
          throw malformed(`page ${number}: ${p.hasNextPage} is not a boolean`);
        const endCursor = getPath(data, p.endCursor);
        if (endCursor !== null && endCursor !== undefined && typeof endCursor !== 'string')
          throw malformed(`page ${number}: ${p.endCursor} is not a string`);
        if (hasNextPage) {
          if (!endCursor)
            throw malformed(
              `page ${number}: ${p.hasNextPage ? 'hasNextPage is true but there is' : 'a page of records with'} no endCursor`,
            );
          if (seen.has(endCursor)) throw malformed(`page ${number}: cursor repeated; the server is looping`);
          if (records.length === 0) throw malformed(`page ${number}: empty page with hasNextPage true`);
          seen.add(endCursor);
        }
        yield {
          number,
          records,
          endCursor: (endCursor as string | null | undefined) ?? cursor,
          hasNextPage,
          ...(total !== undefined ? { total } : {}),
          pageSize: size,
        };
        if (!hasNextPage) return;
        cursor = endCursor as string;
      }
      break;
    }
    case 'offset': {
      const p = stream.paths;
      let offset = Number(options.startCursor ?? 0);
      for (let number = 1; number <= maxPages; number++) {
        const data = await sized((n) => ({ [p.limitVariable]: n, [p.offsetVariable]: offset }));
        const records = listOf(data, number);
        const total = count(data, p.total, number);
        offset += records.length;
        const hasNextPage = records.length > 0 && (total === undefined || offset < total);
        yield {
          number,
          records,
          endCursor: String(offset),
          hasNextPage,
          ...(total !== undefined ? { total } : {}),
          pageSize: size,
        };
        if (!hasNextPage) return;
      }
      break;
    }
    case 'token': {
      const p = stream.paths;
      const seen = new Set<string>();
      let token = options.startCursor ?? null;
      if (token) seen.add(token);
      for (let number = 1; number <= maxPages; number++) {
        const data = await sized((n) => ({ [p.limitVariable]: n, [p.tokenVariable]: token }));
        const records = listOf(data, number);
        const next = getPath(data, p.nextToken);
        if (next !== null && next !== undefined && typeof next !== 'string')
          throw malformed(`page ${number}: ${p.nextToken} is not a string`);
        if (next) {
          if (seen.has(next)) throw malformed(`page ${number}: token repeated; the server is looping`);
          seen.add(next);
        }
        // An empty or short page with a token is not the end (a filtered scan answers them): only no token is.
        yield { number, records, endCursor: next || token, hasNextPage: Boolean(next), pageSize: size };
        if (!next) return;
        token = next;
      }
      break;
    }
    case 'page': {
      const p = stream.paths;
      let page = options.startCursor ? Number(options.startCursor) : p.firstPage;
      let before = 0; // records on the pages before this one, for a total (a resumed pass does not know it)
      for (let number = 1; number <= maxPages; number++, page++) {
        const data = await sized(
          (n) => ({ [p.pageVariable]: page, [p.perPageVariable]: n }),
          // Past the first page, a size that divides the old one, so that this page starts where it did.
          (from, to) => {
            if (page === p.firstPage) return to;
            let d = to;
            while (from % d !== 0) d--;
            page = p.firstPage + ((page - p.firstPage) * from) / d;
            return d;
          },
        );
        const records = listOf(data, number);
        const total = count(data, p.total, number);
        const totalPages = count(data, p.totalPages, number);
        const more = p.hasNextPage ? getPath(data, p.hasNextPage) : undefined;
        if (p.hasNextPage && typeof more !== 'boolean')
          throw malformed(`page ${number}: ${p.hasNextPage} is not a boolean`);
        before += records.length;
        const hasNextPage =
          records.length > 0 &&
          (typeof more === 'boolean'
            ? more
            : totalPages !== undefined
              ? page - p.firstPage + 1 < totalPages
              : total !== undefined && !options.startCursor
                ? before < total
                : true);
        if (more === true && records.length === 0)
          throw malformed(`page ${number}: empty page that says more follow`);
        yield {
          number,
          records,
          endCursor: String(page + 1),
          hasNextPage,
          ...(total !== undefined ? { total } : {}),
          pageSize: size,
        };
        if (!hasNextPage) return;
      }
      break;
    }
  }
  throw malformed(`more than ${maxPages} pages`);
}
