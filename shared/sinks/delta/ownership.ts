/*
 * What the delta sink owns. A location it is given (a folder, DELTA_URL, a lakehouse's Tables/) is shared: the sink
 * writes into, and cleans up, only tables it made. Its mark is in the table's own configuration (metaData), where
 * every engine keeps it through its own commits (OPTIMIZE, ALTER TABLE) and an operator sees it (`SHOW TBLPROPERTIES`,
 * `DESCRIBE DETAIL`): which app made the table, for which stream, and which of the stream's two tables it is. The
 * `txn` application ids say who committed, not who made the table or for which stream, so they are not the mark.
 */
import { IntegrationError } from '../../errors';
import type { MetaDataAction, Snapshot } from './actions';
import { ENGINE } from './marks';
import { isOwnFile, isStagedFile } from './names';
import type { DeltaStore } from './store';

/** The configuration keys of the mark: the app that made the table, and the table's place among a stream's two. */
export const OWNER_KEY = 'tenantIntegrations.owner';
export const TABLE_KEY = 'tenantIntegrations.table';

/** Which table of which stream: its current records or its changes. */
export interface TableRole {
  kind: 'current' | 'changes';
  stream: string;
}

const roleText = (r: TableRole) => `${r.kind}:${r.stream}`;

/** The mark a table made for `role` carries in its configuration. */
export const markOf = (role: TableRole): Record<string, string> => ({
  [OWNER_KEY]: ENGINE,
  [TABLE_KEY]: roleText(role),
});

/** Whether the table's metadata carries the mark (of any role). */
export const isMarked = (meta: MetaDataAction | undefined) => meta?.configuration[OWNER_KEY] === ENGINE;

/**
 * A table this sink made before it marked its tables (the first release of the delta sink): its commits carry the
 * app's `txn` and no other engine made it. It is taken as the sink's, and marked by the next commit.
 */
const isEarlierOwn = (snapshot: Snapshot) =>
  [...snapshot.txns.keys()].some((appId) => appId.startsWith(`${ENGINE}/`));

/** Whether the table is the sink's (marked, or of its first release): what housekeeping may touch. */
export const owns = (snapshot: Snapshot) =>
  snapshot.version >= 0 && (isMarked(snapshot.metaData) || isEarlierOwn(snapshot));

/** What the sink may do at a table's place: make it (nothing there but its own leftovers), or write it (its own). */
export type Claim = 'new' | 'ours';

const taken = (where: string, stream: string, what: string, fix: string) =>
  new IntegrationError(
    'sink_location_taken',
    `Delta sink: ${where} ${what}; stream ${stream} was not written there, and nothing there was changed or removed. ${fix}`,
  );

/**
 * Whether `role`'s table may be written at `table`, as its snapshot (read already) and the folder say. Anything there
 * that is not the sink's own — an ordinary folder holding files, another engine's table, this sink's table for another
 * stream — throws `sink_location_taken` naming the path and what to do; nothing is written or removed.
 */
export async function claim(
  store: DeltaStore,
  table: string,
  role: TableRole,
  snapshot: Snapshot,
  options: { abortSignal?: AbortSignal } = {},
): Promise<Claim> {
  const where = `${store.description}/${table}`;
  const rename = `Give the delta sink another location (delta:PATH or DELTA_URL), or give stream ${role.stream} another name (its \`name\` in SYNC_STREAMS_FILE; \`tenant-integrations discover --out FILE\` writes one).`;
  if (snapshot.version >= 0) {
    if (isMarked(snapshot.metaData)) {
      const is = snapshot.metaData?.configuration[TABLE_KEY];
      if (is === undefined || is === roleText(role)) return 'ours';
      const [kind, ...stream] = is.split(':');
      throw taken(
        where,
        role.stream,
        `is this app's ${kind === 'changes' ? 'changes' : 'current-records'} table of stream ${stream.join(':')}`,
        rename,
      );
    }
    if (isEarlierOwn(snapshot)) return 'ours';
    throw taken(
      where,
      role.stream,
      'is a Delta table another engine made (it carries no tenant-integrations mark)',
      `${rename} To have the app write a table it did not make is not offered: it would own what it did not create.`,
    );
  }
  for await (const file of store.list(table, options)) {
    const path = file.path.slice(table.length + 1);
    if (isStagedFile(path) || isOwnFile(path)) continue;
    throw taken(
      where,
      role.stream,
      `is a folder that is not a Delta table and holds files (${path} among them)`,
      rename,
    );
  }
  return 'new';
}
