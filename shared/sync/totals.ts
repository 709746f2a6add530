import { IntegrationError } from '../errors';
import type { TenantGraphqlClient } from '../graphql/client';
import { paginate } from '../graphql/pager';
import type { StreamDefinition } from '../streams';

/**
 * A full pass that read fewer records than the tenant says it holds (a total in the page, a count beside it, a
 * connection's `totalCount`) lost some on the way — pages that start where the app did not expect, a cursor that
 * skips: it never ends green. The total is asked once more first, since records deleted while the pass ran lower it:
 * only a shortfall against the total as it is now fails the stream, by name, and its checkpoint is let go so the next
 * run reads the listing again from the start.
 */
export async function confirmTotal(
  graphql: TenantGraphqlClient,
  stream: StreamDefinition,
  read: number,
  stated: { min: number; max: number },
  options: { abortSignal?: AbortSignal; clearCheckpoint: () => Promise<void> },
): Promise<void> {
  if (read >= stated.min) return;
  let now: number | undefined;
  for await (const page of paginate(graphql, stream, {
    pageSize: 1,
    maxPages: 1,
    abortSignal: options.abortSignal,
  })) {
    now = page.total;
    break; // the first page holds the total: the listing is not read on
  }
  if (now === undefined || read >= now) return;
  await options.clearCheckpoint();
  throw new IntegrationError(
    'listing_incomplete',
    `stream ${stream.name}: a full pass read ${read} record${read === 1 ? '' : 's'}, but the tenant says it holds ${now}: its pages lost ${now - read} on the way (check the stream's paging — where pages start, the page size — with \`tenant-integrations discover\`); the next run reads the listing again from the start`,
  );
}
