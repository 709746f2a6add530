import { Kind, parse, print, visit } from 'graphql';
import { bounded, GraphqlErrors } from '../errors';
import type { TenantGraphqlClient } from '../graphql/client';
import { paginate } from '../graphql/pager';
import { recordPath, streamSchema, type StreamDefinition } from '../streams';
import { editRecordSelection } from './edit';
import type { LeftOut } from './selection';

/**
 * A proposed stream tried with one small page: every field the credential may not read (a GraphQL error whose path
 * ends in that field) is taken out of the selection and named with the server's reason, until the page reads
 * clean — or the stream cannot be read at all, and says why.
 */
export const PROBE_ROUNDS = 10;

/** The probe runs under its own operation name, so the tenant's logs and our traces tell it from a run's pages. */
const asProbe = (document: string) =>
  print(
    visit(parse(document), {
      [Kind.OPERATION_DEFINITION]: (op) => ({
        ...op,
        name: { kind: Kind.NAME, value: `Probe_${(op.name?.value ?? 'stream').replace(/^Sync_/, '')}` },
      }),
    }),
  );

export async function probeStream(
  graphql: TenantGraphqlClient,
  stream: StreamDefinition,
  options: { abortSignal?: AbortSignal } = {},
): Promise<{ stream: StreamDefinition; leftOut: LeftOut[] } | { failed: string }> {
  const leftOut: LeftOut[] = [];
  let current = stream;
  const record = recordPath(stream);
  for (let round = 0; round < PROBE_ROUNDS; round++) {
    try {
      const pages = paginate(
        graphql,
        { ...current, document: asProbe(current.document) },
        {
          pageSize: Math.min(2, current.pageSize),
          abortSignal: options.abortSignal,
        },
      );
      await pages.next();
      await pages.return(undefined);
      return { stream: current, leftOut };
    } catch (err) {
      if (!(err instanceof GraphqlErrors))
        return { failed: bounded(err instanceof Error ? err.message : String(err), 500) };
      const fields = new Map<string, string>();
      for (const e of err.errors) {
        const keys = (e.path ?? []).filter((k): k is string => typeof k === 'string');
        const rel =
          keys.length > record.length && record.every((k, i) => keys[i] === k)
            ? keys.slice(record.length)
            : undefined;
        if (!rel) return { failed: bounded(e.message, 500) };
        fields.set(rel.join('.'), bounded(e.message, 300));
      }
      if (!fields.size) return { failed: bounded(err.message, 500) };
      const { document } = editRecordSelection(current.document, record, {
        remove: [...fields.keys()].map((f) => f.split('.')),
      });
      const next = streamSchema.safeParse({ ...current, document });
      if (!next.success)
        return {
          failed: `without ${[...fields.keys()].join(', ')} the stream is not valid (${next.error.issues[0]?.message})`,
        };
      for (const [field, reason] of fields)
        leftOut.push({ field, reason: `the credential may not read it: ${reason}` });
      current = next.data as StreamDefinition;
    }
  }
  return { failed: `more than ${PROBE_ROUNDS} rounds of fields the credential may not read` };
}
