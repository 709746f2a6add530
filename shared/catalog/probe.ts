import { Kind, parse, print, visit } from 'graphql';
import { bounded, GraphqlErrors } from '../errors';
import type { TenantGraphqlClient } from '../graphql/client';
import { paginate } from '../graphql/pager';
import { getPath } from '../streams/paths';
import { recordPath, streamSchema, type StreamDefinition } from '../streams';
import { editRecordSelection } from './edit';
import type { LeftOut } from './selection';

/**
 * A proposed stream tried with one small page: every field the credential may not read (a GraphQL error whose path
 * ends in that field) is taken out of the selection and named with the server's reason, until the page reads
 * clean — or the stream cannot be read at all, and says why.
 */
export const PROBE_ROUNDS = 10;

/**
 * Discovery's reads run under their own operation names (`Probe_…`, `Prove_…`), so the tenant's logs, its rate
 * limits by operation and our traces tell them from a run's pages (`Sync_…`).
 */
export const renamedFor = (purpose: 'Probe' | 'Prove', document: string) =>
  print(
    visit(parse(document), {
      [Kind.OPERATION_DEFINITION]: (op) => ({
        ...op,
        name: { kind: Kind.NAME, value: `${purpose}_${(op.name?.value ?? 'stream').replace(/^Sync_/, '')}` },
      }),
    }),
  );
const asProbe = (document: string) => renamedFor('Probe', document);

export async function probeStream(
  graphql: TenantGraphqlClient,
  stream: StreamDefinition,
  options: { abortSignal?: AbortSignal; variables?: Record<string, unknown> } = {},
): Promise<{ stream: StreamDefinition; leftOut: LeftOut[]; first?: unknown } | { failed: string }> {
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
          variables: options.variables,
        },
      );
      const page = await pages.next();
      await pages.return(undefined);
      // The first record read, for what discovery wants of one (a parent's key to probe its children with).
      return { stream: current, leftOut, first: page.done ? undefined : page.value.records[0] };
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

/**
 * Where numbered pages start, for a page argument without a default: pages 0 and 1 read (two records each) and
 * compared — records on page 0 that page 1 does not hold mean pages count from 0; records on page 1 and none new on
 * page 0 mean from 1 (a server that counts from 1 answers page 0 as page 1, or with nothing, or refuses it). Both
 * empty — a collection with no records yet — decides nothing: read as 1 where it counts from 0, the first page would
 * never be read, without a word, once records came.
 */
export async function firstPageOf(
  graphql: TenantGraphqlClient,
  stream: StreamDefinition,
  options: { abortSignal?: AbortSignal } = {},
): Promise<0 | 1 | undefined> {
  if (stream.pagination !== 'page') return 1;
  const p = stream.paths;
  const records = async (page: number) => {
    try {
      const data = await graphql.request(asProbe(stream.document), {
        variables: { [p.pageVariable]: page, [p.perPageVariable]: 2 },
        abortSignal: options.abortSignal,
      });
      const list = getPath(data, p.records);
      return Array.isArray(list) ? list.map((r) => JSON.stringify(r)) : [];
    } catch (err) {
      if (err instanceof GraphqlErrors) return [];
      throw err;
    }
  };
  const [zero, one] = [await records(0), await records(1)];
  if (zero.some((r) => !one.includes(r))) return 0;
  return one.length ? 1 : undefined;
}

/** A page stream with where its pages start decided (`firstPage`), or still unknown (`firstPageUnknown`). */
export async function withFirstPage(
  graphql: TenantGraphqlClient,
  stream: StreamDefinition,
  options: { abortSignal?: AbortSignal } = {},
): Promise<StreamDefinition> {
  if (stream.pagination !== 'page') return stream;
  const firstPage = await firstPageOf(graphql, stream, options);
  const { firstPageUnknown: _, ...paths } = stream.paths;
  return firstPage === undefined
    ? { ...stream, paths: { ...paths, firstPage: 1, firstPageUnknown: true } }
    : { ...stream, paths: { ...paths, firstPage } };
}
