import type { TenantGraphqlClient } from '../graphql/client';
import { recordPath, streamSchema, type StreamDefinition } from '../streams';
import type { Proposal } from './discover';
import { editRecordSelection } from './edit';
import { provePageEnds } from './page-ends';
import { proveIncremental } from './prove';

/**
 * Which way a probed stream reads incrementally: the proposal's own, else each alternative in order, the first the
 * tenant proves (./prove.ts) — or none, and the stream reads whole, saying why each way was not taken. The fields
 * the probe left out (the credential may not read them) are left out of each alternative too.
 */
export async function chooseIncremental(
  graphql: TenantGraphqlClient,
  p: Proposal,
  options: { abortSignal?: AbortSignal } = {},
): Promise<Proposal> {
  if (!p.stream.incremental) return p;
  const leftOut = new Set(p.stream.exclude ?? []);
  const like = (s: StreamDefinition): StreamDefinition => {
    if (!leftOut.size) return s;
    const { document } = editRecordSelection(s.document, recordPath(s), {
      remove: [...leftOut].map((f) => f.split('.')),
    });
    return streamSchema.parse({ ...s, document, exclude: [...leftOut] }) as StreamDefinition;
  };
  const tried: string[] = [];
  const ways = [
    { stream: p.stream, said: p.said },
    ...(p.alternatives ?? []).map((a) => ({ ...a, stream: like(a.stream) })),
  ];
  for (const way of ways) {
    if (!way.stream.incremental)
      return {
        ...p,
        stream: way.stream,
        said: undefined,
        alternatives: undefined,
        incremental: `none proved, so every pass reads it whole — ${tried.join('; ')}`,
      };
    const proof = await proveIncremental(graphql, way.stream, options);
    if (proof.proved)
      return {
        ...p,
        stream: way.stream,
        said: way.said,
        alternatives: undefined,
        incremental: `${way.said ?? way.stream.incremental.variable} — proved: ${proof.how}${tried.length ? ` (not: ${tried.join('; ')})` : ''}`,
      };
    tried.push(`${way.said ?? way.stream.incremental.variable}: ${proof.why}`);
  }
  return { ...p, alternatives: undefined, incremental: tried.join('; ') };
}

/**
 * A chosen stream without `hasNextPage` where the tenant proves its pages full until the last (./page-ends.ts), saying
 * which way it ends either way.
 */
export async function withPageEnds(
  graphql: TenantGraphqlClient,
  p: Proposal,
  options: { abortSignal?: AbortSignal } = {},
): Promise<Proposal> {
  if (p.stream.pagination !== 'cursor' || !p.stream.paths.hasNextPage || p.stream.parent) return p;
  const proof = await provePageEnds(graphql, p.stream, options);
  return proof.proved
    ? {
        ...p,
        stream: proof.stream,
        pageEnds: `at an empty page, hasNextPage not asked — proved: ${proof.how}`,
      }
    : { ...p, pageEnds: `where hasNextPage says — ${proof.why}` };
}
