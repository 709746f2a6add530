import { createAccessLayer } from '../../shared/access';
import { loadConfig } from '../../shared/app';
import { paginate } from '../../shared/graphql/pager';
import { keyPaths } from '../../shared/streams';
import { keyGetter } from '../../shared/streams/paths';
import { resolveStreams } from '../../sandbox/streams';

/** Every record of a stream as the tenant serves it now, by id — read through the app's own GraphQL client. */
export async function sourceRecords(
  env: Record<string, string>,
  stream: string,
): Promise<Map<string, unknown>> {
  const access = createAccessLayer(loadConfig(env));
  const def = resolveStreams({}).find((s) => s.name === stream);
  if (!def) throw new Error(`no stream ${stream}`);
  const out = new Map<string, unknown>();
  const keyOf = keyGetter(keyPaths(def));
  for await (const page of paginate(access.graphql, def, { pageSize: 100 }))
    for (const r of page.records) out.set(String(keyOf(r)), r);
  return out;
}
