import { GraphqlErrors, UpstreamError } from '../errors';
import type { TenantGraphqlClient } from '../graphql/client';
import { paginate } from '../graphql/pager';
import { streamSchema, type StreamDefinition } from '../streams';
import { renamedFor } from './probe';

/**
 * Whether a cursor stream may stop asking `hasNextPage`. Some servers answer it by counting what is left of the list
 * on every page (PostGraphile scans the rest of the table: a page near the end of 300 000 rows costs it three times
 * one near the start), yet the answer is only needed where a page can be short before the end (a filtered list).
 *
 * Only for a stream read whole or newest first (an incremental filter may answer short pages where the whole list has
 * none). Proved on the tenant: PROOF_PAGES pages of PROOF_SIZE records, read with `hasNextPage` — every page it says is
 * followed is full, and the list goes on past the first. Not proved (kept) where the collection is too small to
 * show it, where a page is short or empty before the end, or where the server refuses. Without `hasNextPage` the
 * pager ends at the first empty page (shared/graphql/pager.ts) — one request more a pass, and a short page never ends
 * a pass early — and a full pass still checks what it read against the connection's total where it has one.
 */
export const PROOF_SIZE = 2;
export const PROOF_PAGES = 3;

/** The document's `pageInfo` as discovery writes it (./shapes.ts), and without `hasNextPage`. */
const ASKED = 'pageInfo { hasNextPage endCursor }';
const NOT_ASKED = 'pageInfo { endCursor }';

export type PageEnds =
  { proved: true; stream: StreamDefinition; how: string } | { proved: false; why: string };

export async function provePageEnds(
  graphql: TenantGraphqlClient,
  stream: StreamDefinition,
  options: { abortSignal?: AbortSignal } = {},
): Promise<PageEnds> {
  if (stream.pagination !== 'cursor' || !stream.paths.hasNextPage || stream.parent)
    return { proved: false, why: 'not a top-level cursor stream that asks hasNextPage' };
  // A filter (changed since…) can make a server answer short pages before the end — a scan filtered after its limit —
  // though unfiltered pages are full: only a stream read whole or newest first goes without hasNextPage.
  if (stream.incremental && stream.incremental.kind !== 'order')
    return {
      proved: false,
      why: `its incremental passes filter the list ($${stream.incremental.variable}), and a filtered page may be short before the end`,
    };
  if (stream.document.split(ASKED).length !== 2)
    return { proved: false, why: 'its document is not the one discovery writes' };
  const sizes: Array<{ records: number; more: boolean }> = [];
  try {
    const pages = paginate(
      graphql,
      { ...stream, document: renamedFor('Prove', stream.document) },
      { pageSize: PROOF_SIZE, maxPages: PROOF_PAGES, abortSignal: options.abortSignal },
    );
    for await (const page of pages) {
      sizes.push({ records: page.records.length, more: page.hasNextPage });
      if (sizes.length === PROOF_PAGES) break;
    }
  } catch (err) {
    if (options.abortSignal?.aborted) throw err;
    const message = err instanceof GraphqlErrors || err instanceof UpstreamError ? err.message : String(err);
    return { proved: false, why: `reading it failed: ${message.slice(0, 200)}` };
  }
  const followed = sizes.filter((s) => s.more);
  if (!followed.length)
    return {
      proved: false,
      why: `the collection is too small to show it (${sizes[0]?.records ?? 0} records)`,
    };
  const short = followed.find((s) => s.records !== PROOF_SIZE);
  if (short)
    return {
      proved: false,
      why: `a page of ${short.records} records (${PROOF_SIZE} asked) said more follow`,
    };
  const paths = { ...stream.paths };
  delete paths.hasNextPage;
  return {
    proved: true,
    stream: streamSchema.parse({
      ...stream,
      document: stream.document.replace(ASKED, NOT_ASKED),
      paths,
    }) as StreamDefinition,
    how: `${followed.length} page${followed.length === 1 ? '' : 's'} of ${PROOF_SIZE} full before the next`,
  };
}
