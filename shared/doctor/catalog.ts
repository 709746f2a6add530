import type { GraphQLSchema } from 'graphql';
import type { Check } from '../check';
import { CATALOG_SETTINGS } from '../catalog/settings';
import { partOf } from '../config';
import { actionFor, bounded, codeOf, GraphqlErrors, IntegrationError } from '../errors';
import type { DoctorContext } from '../feature';
import type { StreamDefinition } from '../streams';

/**
 * The catalog held against the tenant's schema: one check per stream, naming each field that is gone and each
 * the stream does not read (SYNC_STREAMS_FILE, else the stored catalog; none yet is what the first run discovers).
 */
export async function catalogChecks(ctx: DoctorContext, signal: AbortSignal): Promise<Check[]> {
  if (!ctx.passed.has('GraphQL'))
    return [
      {
        name: 'catalog',
        state: 'warn',
        found: 'not tried: GraphQL did not answer',
        action: 'Fix GraphQL first.',
      },
    ];
  const { catalogStreams, storedCatalog } = await import('../catalog');
  const { introspect } = await import('../catalog/introspect');
  const { driftOf } = await import('../catalog/drift');
  const { selectStreams } = await import('../streams');
  const { catalogStore } = await import('../state/catalog-store');
  const tenant = ctx.access.tenant.name;
  const state = catalogStore(ctx.config);
  const settings = partOf(ctx.config, CATALOG_SETTINGS);
  let schema: GraphQLSchema | undefined;
  let refused = false;
  try {
    schema = await introspect(ctx.access.graphql, { abortSignal: signal });
  } catch (err) {
    if (!(err instanceof IntegrationError && err.code === 'introspection_refused')) throw err;
    refused = true;
  }
  const file = settings.streamsFile;
  const stored = file ? undefined : await storedCatalog(state, tenant);
  if (!file && !stored) {
    if (refused)
      return [
        {
          name: 'catalog',
          state: 'fail',
          found:
            'no SYNC_STREAMS_FILE and the tenant refuses introspection: there is nothing to discover the streams from',
          action:
            'Write the streams in a file named by SYNC_STREAMS_FILE (docs/sync.md, “When introspection is refused”).',
        },
      ];
    const { discover } = await import('../catalog');
    const found = await discover(ctx.access.graphql, {
      abortSignal: signal,
      maxStreams: settings.maxStreams,
    });
    const streams = found.streams.map((p) => p.stream);
    const clashing = await refusedNames(ctx, streams);
    return [
      {
        name: 'catalog',
        state: 'ok',
        found: `none stored yet: the first run discovers ${streams.length} streams (${streams.map((s) => s.name).join(', ')}); \`tenant-integrations discover\` shows them`,
      },
      ...[...clashing].map(([stream, why]): Check => ({
        name: `stream ${stream}`,
        state: 'fail',
        found: why,
        action: actionFor('stream_names_collide'),
      })),
    ];
  }
  const streams = selectStreams(
    file
      ? (
          await catalogStreams({
            graphql: ctx.access.graphql,
            state,
            tenant,
            streamsFile: file,
            personal: settings.personal.chosen,
            now: Date.now,
          })
        ).streams
      : (stored?.streams ?? []),
    settings.streams,
  );
  const where = file ? `SYNC_STREAMS_FILE ${file}` : 'the stored catalog';
  const collide = await refusedNames(ctx, streams);
  const named = (s: StreamDefinition): Check | undefined =>
    collide.has(s.name)
      ? {
          name: `stream ${s.name}`,
          state: 'fail',
          found: collide.get(s.name) as string,
          action: actionFor('stream_names_collide'),
        }
      : undefined;
  if (refused)
    return (await firstPages(ctx, streams, where, signal)).map(
      (c) => named(streams.find((s) => `stream ${s.name}` === c.name) as StreamDefinition) ?? c,
    );
  const { schemaProblems } = await import('../catalog/introspect');
  const { invalidTouched } = await import('../catalog/drift');
  const { invalidMessage } = await import('../catalog');
  const { unmarkedPersonal } = await import('../catalog/personal');
  const problems = schemaProblems(schema as GraphQLSchema);
  const invalid: Check[] = problems.length
    ? [
        {
          name: 'tenant schema',
          state: 'warn',
          found: `graphql-js calls it invalid in ${problems.length} place${problems.length === 1 ? '' : 's'}: ${problems
            .slice(0, 3)
            .map((p) => p.message)
            .join('; ')}; only a stream that reads there is held back`,
          action: actionFor('schema_invalid'),
        },
      ]
    : [];
  return invalid.concat(
    streams.map((s): Check => {
      const clash = named(s);
      if (clash) return clash;
      const touched = invalidTouched(schema as GraphQLSchema, s, problems);
      if (touched.length)
        return {
          name: `stream ${s.name}`,
          state: 'fail',
          found: invalidMessage(touched),
          action: actionFor('schema_invalid'),
        };
      const d = driftOf(schema as GraphQLSchema, s);
      if (d.removed.length || d.problems.length)
        return {
          name: `stream ${s.name}`,
          state: 'fail',
          found: `the tenant's schema changed: ${[...(d.removed.length ? [`no longer has ${d.removed.join(', ')}`] : []), ...d.problems.slice(0, 3)].join('; ')}`,
          action:
            'Run `tenant-integrations discover` and take the new catalog (or edit SYNC_STREAMS_FILE), or set SYNC_SCHEMA_CHANGES=propagate.',
        };
      const unmarked = unmarkedPersonal(s);
      if (unmarked.length)
        return {
          name: `stream ${s.name}`,
          state: 'warn',
          found: `validates (${where}); ${unmarked.map((f) => `${f.field} (${f.kind})`).join(', ')} look${unmarked.length === 1 ? 's' : ''} like personal data and ${unmarked.length === 1 ? 'has' : 'have'} no policy: sent as the tenant sends ${unmarked.length === 1 ? 'it' : 'them'}`,
          action:
            'Take the catalog `tenant-integrations discover` proposes (it marks them for SYNC_PERSONAL_DATA), or name them in the stream’s "personal" in SYNC_STREAMS_FILE — "keep" where that is your decision (docs/personal-data.md).',
        };
      if (d.added.length)
        return {
          name: `stream ${s.name}`,
          state: 'warn',
          found: `validates (${where}); the tenant has fields it does not read: ${d.added.join(', ')}`,
          action:
            '`tenant-integrations discover` proposes them; SYNC_SCHEMA_CHANGES=propagate takes them by itself.',
        };
      return {
        name: `stream ${s.name}`,
        state: 'ok',
        found: `validates against the tenant's schema (${where})`,
      };
    }),
  );
}

/** The streams the configured sinks would write to one place, each with why (shared/sinks/names.ts). */
async function refusedNames(ctx: DoctorContext, streams: StreamDefinition[]): Promise<Map<string, string>> {
  const { createSink, nameCollisions, refusedByName } = await import('../sinks');
  // Made only to be asked for names: no sink opens a connection before its first write. A sink that cannot be
  // made (no storage here) has no names to clash: its own check says why it cannot be made.
  let sink;
  try {
    sink = createSink(ctx.config.sinkSpecs, { config: ctx.config, secrets: ctx.access.secrets });
  } catch (err) {
    if (err instanceof IntegrationError) return new Map();
    throw err;
  }
  return refusedByName(
    nameCollisions(
      sink,
      streams.map((s) => s.name),
    ),
  );
}

/**
 * Where the tenant refuses introspection, each stream is held against the tenant by reading its first page (one
 * record), one stream after the other: a field the tenant does not know is named, as a run's first page would.
 */
async function firstPages(
  ctx: DoctorContext,
  streams: StreamDefinition[],
  where: string,
  signal: AbortSignal,
): Promise<Check[]> {
  const { paginate } = await import('../graphql/pager');
  const { removedFromErrors } = await import('../catalog/drift');
  const checks: Check[] = [];
  for (const s of streams) {
    const name = `stream ${s.name}`;
    try {
      const pages = paginate(ctx.access.graphql, s, { pageSize: 1, abortSignal: signal });
      await pages.next();
      await pages.return(undefined);
      checks.push({
        name,
        state: 'ok',
        found: `its first page reads (${where}; the tenant refuses introspection, so it was checked by reading)`,
      });
    } catch (err) {
      if (signal.aborted) throw err;
      const gone = err instanceof GraphqlErrors ? removedFromErrors(err.errors.map((e) => e.message)) : [];
      checks.push(
        gone.length
          ? {
              name,
              state: 'fail',
              found: `the tenant does not know ${gone.map((g) => `${g.type}.${g.field}`).join(', ')} (read from its first page: introspection is refused)`,
              action: `Fix the stream in ${where}: take those fields out or correct their names (docs/sync.md, “When introspection is refused”).`,
            }
          : {
              name,
              state: 'fail',
              found: `its first page fails: ${bounded(err instanceof Error ? err.message : String(err), 300)}`,
              action: actionFor(codeOf(err)),
            },
      );
    }
  }
  return checks;
}
