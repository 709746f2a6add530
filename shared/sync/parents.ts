import { IntegrationError } from '../errors';
import type { StreamDefinition } from '../streams';
import type { SyncContext } from './context';
import { forEachEntry, StoredSnapshot } from './snapshot';

/**
 * A child stream's parents: the keys of its parent stream's records, as that stream's last completed pass stored them
 * (its snapshot, in the order it keeps them) — the run reads a child after its parent, so this is the parent as it is
 * now. Each key is given the document as its variable is declared: a number for `Int` or `Float`, else text.
 */
export async function* parentKeys(ctx: SyncContext, stream: StreamDefinition): AsyncGenerator<unknown> {
  const parent = stream.parent;
  if (!parent) return;
  const chunks = await ctx.state.readSnapshot(ctx.tenant, parent.stream);
  if (!chunks)
    throw new IntegrationError(
      'parent_unavailable',
      `stream ${stream.name}: its parent stream ${parent.stream} has not completed a pass yet, so there are no parents to read it for`,
    );
  const declared = new RegExp(`\\$${parent.variable}\\s*:\\s*\\[?\\s*([A-Za-z_][A-Za-z0-9_]*)`).exec(
    stream.document,
  )?.[1];
  const numeric = declared === 'Int' || declared === 'Float';
  for await (const chunk of new StoredSnapshot(chunks).entries()) {
    const ids: string[] = [];
    forEachEntry(chunk, (id) => ids.push(id.toString()));
    for (const id of ids) yield numeric ? Number(id) : id;
  }
}
