import { bounded, GraphqlErrors } from '../errors';
import type { TenantGraphqlClient } from '../graphql/client';
import { paginate } from '../graphql/pager';
import type { StreamDefinition } from '../streams';
import { incrementalVariables } from '../streams/incremental';
import { pathGetter } from '../streams/paths';
import { renamedFor } from './probe';

/**
 * A way to read a collection incrementally, held to its word before discovery chooses it (./incremental.ts finds the
 * candidates): a server may take an argument and ignore it, or accept an ordering it does not keep.
 *
 * - "changed at or after": one page of the collection as a full pass reads it; a time between its oldest and newest
 *   change; one page read with that time. Proved when that page is not empty and holds no record older than the time
 *   — a server that ignored it would answer the full pass's page, older records and all.
 * - "newest first": one page read in that order. Proved when its change times never rise, it has two or more of them,
 *   and it starts at or after the newest of the full pass's page.
 *
 * Not proved where the collection has fewer than two change times to try it with (a new tenant): the stream then
 * reads whole until discovery runs again.
 */
export const PROOF_PAGE = 20;

export type Proof = { proved: true; how: string } | { proved: false; why: string };

async function firstPage(
  graphql: TenantGraphqlClient,
  stream: StreamDefinition,
  options: { abortSignal?: AbortSignal; variables?: Record<string, unknown> },
): Promise<unknown[]> {
  const pages = paginate(
    graphql,
    { ...stream, document: renamedFor('Prove', stream.document) },
    {
      pageSize: Math.min(PROOF_PAGE, stream.pageSize),
      abortSignal: options.abortSignal,
      variables: options.variables,
    },
  );
  try {
    const page = await pages.next();
    return page.done ? [] : page.value.records;
  } finally {
    await pages.return(undefined);
  }
}

export async function proveIncremental(
  graphql: TenantGraphqlClient,
  stream: StreamDefinition,
  options: { abortSignal?: AbortSignal } = {},
): Promise<Proof> {
  const inc = stream.incremental;
  if (!inc) return { proved: false, why: 'no incremental way to prove' };
  const at = pathGetter(inc.field);
  const timeOf = (record: unknown) => Date.parse(String(at(record)));
  try {
    const sample = (await firstPage(graphql, stream, options)).map(timeOf);
    if (sample.some(Number.isNaN))
      return { proved: false, why: `${inc.field} is not a date-time in every record` };
    const distinct = [...new Set(sample)].sort((a, b) => a - b);
    if (distinct.length < 2)
      return {
        proved: false,
        why: `the collection has fewer than two change times to try it with (${sample.length} records read): discover again once it has more`,
      };
    if (inc.kind === 'order') {
      const ordered = (
        await firstPage(graphql, stream, { ...options, variables: incrementalVariables(inc, '') })
      ).map(timeOf);
      if (ordered.some(Number.isNaN))
        return { proved: false, why: `${inc.field} is not a date-time in every record` };
      const rises = ordered.findIndex((t, i) => i > 0 && t > ordered[i - 1]);
      if (rises > 0)
        return {
          proved: false,
          why: `the server did not keep the order: record ${rises + 1} of the page is newer than the one before it`,
        };
      if (new Set(ordered).size < 2)
        return {
          proved: false,
          why: 'the ordered page has fewer than two change times: nothing shows the order',
        };
      if (ordered[0] < distinct[distinct.length - 1])
        return {
          proved: false,
          why: 'the ordered page does not start with the newest record the unordered page holds',
        };
      return { proved: true, how: `a page read this way came newest first (${ordered.length} records)` };
    }
    // The time halfway along the sample's distinct change times: some records are older, some not.
    const t = distinct[Math.floor(distinct.length / 2)];
    const since = new Date(t).toISOString();
    const filtered = (
      await firstPage(graphql, stream, { ...options, variables: incrementalVariables(inc, since) })
    ).map(timeOf);
    if (!filtered.length)
      return {
        proved: false,
        why: `it answered nothing for ${since}, though records changed at or after it`,
      };
    const older = filtered.filter((x) => Number.isNaN(x) || x < t).length;
    if (older)
      return {
        proved: false,
        why: `it answered ${older} of ${filtered.length} records changed before ${since}: the server does not filter by it`,
      };
    return {
      proved: true,
      how: `a read from ${since} returned only records at or after it (${filtered.length})`,
    };
  } catch (err) {
    if (options.abortSignal?.aborted) throw err;
    const message =
      err instanceof GraphqlErrors ? err.errors.map((e) => e.message).join('; ') : (err as Error).message;
    return { proved: false, why: `the server refused it: ${bounded(message, 300)}` };
  }
}
