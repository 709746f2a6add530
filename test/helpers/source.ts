import { createAccessLayer } from '../../shared/access';
import { loadConfig } from '../../shared/settings';
import { getPath, paginate } from '../../shared/graphql/pager';
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
  for await (const page of paginate(access.graphql, def, { pageSize: 100 }))
    for (const r of page.records) out.set(String(getPath(r, def.idPath)), r);
  return out;
}
