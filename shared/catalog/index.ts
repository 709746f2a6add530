import type { GraphQLSchema } from 'graphql';
import { bounded, IntegrationError, type ErrorCode } from '../errors';
import type { TenantGraphqlClient } from '../graphql/client';
import { silentLogger, type Logger } from '../log';
import { keyPaths, parseStreams, readStreamsFile, selectStreams, type StreamDefinition } from '../streams';
import { proposeCatalog, type Proposal } from './discover';
import { driftOf, invalidTouched, propagate, type Drift } from './drift';
import { introspect, schemaProblems, type SchemaProblem } from './introspect';
import { chooseIncremental, withPageEnds } from './choose';
import { probeStream, withFirstPage } from './probe';
import { getPath } from '../streams/paths';
import type { PersonalDefault } from '../personal/policy';
import { withPersonalPolicy } from './personal';

/** Where the catalog is kept between runs (shared/state/catalog-store.ts: beside the sync's state, for every feature). */
export interface CatalogStore {
  readCatalog(tenant: string): Promise<string | undefined>;
  writeCatalog(tenant: string, json: string): Promise<void>;
}

/**
 * The tenant's catalog — the streams a run reads — and where it comes from: SYNC_STREAMS_FILE when set, else the
 * catalog stored beside the sync's state, else one discovered from the tenant's schema and stored for the runs after
 * (docs/sync.md, "First contact with your tenant"). Each run holds its streams against the schema as it is now.
 */

export interface Discovery {
  streams: Proposal[];
  skipped: Array<{ field: string; reason: string }>;
  /** Proposed streams the probe could not read at all, and why. */
  unreadable: Array<{ stream: string; reason: string }>;
  /** What graphql-js finds wrong with the schema (only the streams that touch it are held back). */
  invalid: SchemaProblem[];
  schema: GraphQLSchema;
}

/** Introspection, proposals, and a one-page probe of each (fields the credential may not read are left out). */
export async function discover(
  graphql: TenantGraphqlClient,
  options: { abortSignal?: AbortSignal; maxStreams?: number } = {},
): Promise<Discovery> {
  const schema = await introspect(graphql, options);
  const proposal = proposeCatalog(schema, { maxStreams: options.maxStreams });
  const streams: Proposal[] = [];
  const unreadable: Discovery['unreadable'] = [];
  const invalid = schemaProblems(schema);
  // A parent's first key, to probe its child streams with (none: the child is probed when it has parents).
  const firstKeys = new Map<string, unknown>();
  const parents = new Set(proposal.streams.flatMap((p) => (p.stream.parent ? [p.stream.parent.stream] : [])));
  for (const p of proposal.streams) {
    const touched = invalidTouched(schema, p.stream, invalid);
    if (touched.length) {
      unreadable.push({ stream: p.stream.name, reason: invalidMessage(touched) });
      continue;
    }
    if (p.firstPageUnknown) p.stream = await withFirstPage(graphql, p.stream, options);
    const parent = p.stream.parent;
    if (parent && !firstKeys.has(parent.stream)) {
      streams.push(p); // no parent record to read it for: taken as proposed
      continue;
    }
    const probed = await probeStream(graphql, p.stream, {
      ...options,
      ...(parent ? { variables: { [parent.variable]: firstKeys.get(parent.stream) } } : {}),
    });
    if (!('failed' in probed) && parents.has(p.stream.name)) {
      const [key] = keyPaths(probed.stream);
      const value = key ? getPath(probed.first, key) : undefined;
      if (value !== undefined && value !== null) firstKeys.set(p.stream.name, value);
    }
    if ('failed' in probed) unreadable.push({ stream: p.stream.name, reason: probed.failed });
    else
      streams.push(
        await withPageEnds(
          graphql,
          await chooseIncremental(
            graphql,
            {
              ...p,
              stream: probed.leftOut.length
                ? {
                    ...probed.stream,
                    exclude: [...(probed.stream.exclude ?? []), ...probed.leftOut.map((l) => l.field)],
                  }
                : probed.stream,
              leftOut: [...probed.leftOut, ...p.leftOut],
              fields: p.fields - probed.leftOut.length,
            },
            options,
          ),
          options,
        ),
      );
  }
  return { streams, skipped: proposal.skipped, unreadable, invalid, schema };
}

/** Why a stream that reads where the tenant's schema is invalid is held back (`schema_invalid`). */
export const invalidMessage = (touched: SchemaProblem[]) =>
  `it reads ${[...new Set(touched.map((t) => t.type))].join(', ')}, where the tenant's schema is invalid (${touched
    .map((t) => t.message)
    .slice(0, 2)
    .join(
      '; ',
    )}): take it out of the stream in SYNC_STREAMS_FILE (\`tenant-integrations discover\` proposes streams without it), or ask the tenant to fix its schema`;

/** The stored catalog's format: the streams file's, with when it was discovered. */
export const catalogJson = (streams: StreamDefinition[], discoveredAt: string) =>
  `${JSON.stringify({ discoveredAt, streams }, null, 2)}\n`;

/** A streams file's contents (what `discover --out` writes and SYNC_STREAMS_FILE reads). */
export const streamsFileJson = (streams: StreamDefinition[]) => `${JSON.stringify({ streams }, null, 2)}\n`;

export async function storedCatalog(
  state: CatalogStore,
  tenant: string,
): Promise<{ streams: StreamDefinition[]; discoveredAt?: string } | undefined> {
  const text = await state.readCatalog(tenant);
  if (!text) return undefined;
  const raw = JSON.parse(text) as { streams?: unknown; discoveredAt?: string };
  return {
    streams: parseStreams({ streams: raw.streams }, 'the stored catalog'),
    discoveredAt: raw.discoveredAt,
  };
}

export interface CatalogContext {
  graphql: TenantGraphqlClient;
  state: CatalogStore;
  tenant: string;
  /** SYNC_STREAMS_FILE, SYNC_STREAMS, SYNC_SCHEMA_CHANGES. */
  streamsFile?: string;
  select?: string[];
  /** Where `select` came from, as an unknown name's error says: SYNC_STREAMS by default. */
  selectFrom?: string;
  schemaChanges?: 'report' | 'propagate';
  /** SYNC_PERSONAL_DATA: what a personal field left at `default` becomes. */
  personal: PersonalDefault;
  /** SYNC_MAX_STREAMS. */
  maxStreams?: number;
  now: () => number;
  logger?: Logger;
  abortSignal?: AbortSignal;
}

/**
 * Pages whose start discovery could not tell (their collection was empty then): asked again before any read, and
 * decided — in the stored catalog too — once records show where they start.
 */
async function decideFirstPages(
  ctx: CatalogContext,
  streams: StreamDefinition[],
  store: boolean,
): Promise<StreamDefinition[]> {
  if (!streams.some((s) => s.pagination === 'page' && s.paths.firstPageUnknown)) return streams;
  let decided = 0;
  const out: StreamDefinition[] = [];
  for (const s of streams) {
    if (s.pagination !== 'page' || !s.paths.firstPageUnknown) {
      out.push(s);
      continue;
    }
    const next = await withFirstPage(ctx.graphql, s, { abortSignal: ctx.abortSignal });
    if (next.pagination === 'page' && !next.paths.firstPageUnknown) {
      decided++;
      (ctx.logger ?? silentLogger).log('info', 'first page decided', {
        stream: s.name,
        count: next.paths.firstPage,
      });
    }
    out.push(next);
  }
  if (decided && store)
    await ctx.state.writeCatalog(ctx.tenant, catalogJson(out, new Date(ctx.now()).toISOString()));
  return out;
}

/**
 * The catalog's streams, without looking at drift: the file's, the stored one, or discovered (and stored) now — each
 * personal field's `default` made SYNC_PERSONAL_DATA's choice (stored as `default`, so the setting decides).
 */
export async function catalogStreams(ctx: CatalogContext): Promise<{
  streams: StreamDefinition[];
  source: 'file' | 'stored' | 'discovered';
  schema?: GraphQLSchema;
}> {
  const c = await catalogAsKept(ctx);
  return { ...c, streams: withPersonalPolicy(c.streams, ctx.personal) };
}

async function catalogAsKept(ctx: CatalogContext): Promise<{
  streams: StreamDefinition[];
  source: 'file' | 'stored' | 'discovered';
  schema?: GraphQLSchema;
}> {
  if (ctx.streamsFile)
    return { streams: await decideFirstPages(ctx, readStreamsFile(ctx.streamsFile), false), source: 'file' };
  try {
    const stored = await storedCatalog(ctx.state, ctx.tenant);
    if (stored) return { streams: await decideFirstPages(ctx, stored.streams, true), source: 'stored' };
  } catch (err) {
    // A stored catalog that no longer parses is discovered again rather than failing every run from now on.
    (ctx.logger ?? silentLogger).log('warn', 'stored catalog unreadable; discovering again', {
      tenant: ctx.tenant,
      reason: bounded((err as Error).message, 200),
    });
  }
  const found = await discover(ctx.graphql, { abortSignal: ctx.abortSignal, maxStreams: ctx.maxStreams });
  if (!found.streams.length)
    throw new IntegrationError(
      'catalog_invalid',
      `Discovery found no collection the credential can read in ${ctx.tenant}'s schema${
        found.skipped.length
          ? ` (root fields: ${found.skipped
              .map((s) => `${s.field} — ${s.reason}`)
              .join('; ')
              .slice(0, 600)})`
          : ''
      }: name streams in a file with SYNC_STREAMS_FILE.`,
    );
  const streams = found.streams.map((p) => p.stream);
  await ctx.state.writeCatalog(ctx.tenant, catalogJson(streams, new Date(ctx.now()).toISOString()));
  (ctx.logger ?? silentLogger).log('info', 'catalog discovered', {
    tenant: ctx.tenant,
    count: streams.length,
  });
  return { streams, source: 'discovered', schema: found.schema };
}

export interface RunCatalog {
  streams: StreamDefinition[];
  source: 'file' | 'stored' | 'discovered';
  /** False when the tenant refuses introspection: drift then shows only as a first page's errors. */
  introspection: boolean;
  /** Streams that cannot run (fields gone under SYNC_SCHEMA_CHANGES=report, or a change that cannot be adopted). */
  blocked: Record<string, { code: ErrorCode; message: string }>;
  /** Fields the tenant has that a stream does not read, by stream. */
  added: Record<string, string[]>;
  /** What SYNC_SCHEMA_CHANGES=propagate changed. */
  changes: Array<{ stream: string; added: string[]; removed: string[] }>;
}

const driftMessage = (stream: string, d: Drift) =>
  `stream ${stream}: the tenant's schema changed under it — ${[
    ...(d.removed.length ? [`no longer has ${d.removed.join(', ')}`] : []),
    ...d.problems.slice(0, 3),
  ].join(
    '; ',
  )}. Run \`tenant-integrations discover\` and take the new catalog, or set SYNC_SCHEMA_CHANGES=propagate.`;

/**
 * A run's streams, held against the tenant's schema as it is now: under `report`, a stream with a field gone is
 * blocked (the others run) and fields the tenant added are named; under `propagate`, both are adopted — in the
 * stored catalog, or for this run when the streams come from a file.
 */
export async function runCatalog(ctx: CatalogContext): Promise<RunCatalog> {
  const logger = ctx.logger ?? silentLogger;
  const base = await catalogAsKept(ctx);
  const selected = selectStreams(base.streams, ctx.select, { from: ctx.selectFrom });
  let schema = base.schema;
  let introspection = true;
  if (!schema)
    try {
      schema = await introspect(ctx.graphql, { abortSignal: ctx.abortSignal });
    } catch (err) {
      if (!(err instanceof IntegrationError)) throw err;
      // The streams are known: without the schema, drift shows as a first page's errors instead.
      introspection = false;
      if (err.code !== 'introspection_refused')
        logger.log('warn', 'schema not read; drift is checked by the first pages', {
          tenant: ctx.tenant,
          code: err.code,
        });
    }
  const out: RunCatalog = {
    streams: [],
    source: base.source,
    introspection,
    blocked: {},
    added: {},
    changes: [],
  };
  const replaced = new Map<string, StreamDefinition>();
  const problems = schema ? schemaProblems(schema) : [];
  for (const stream of selected) {
    const touched = schema ? invalidTouched(schema, stream, problems) : [];
    if (touched.length) {
      out.streams.push(stream);
      out.blocked[stream.name] = {
        code: 'schema_invalid',
        message: `stream ${stream.name}: ${invalidMessage(touched)}`,
      };
      logger.log('warn', 'stream reads an invalid part of the schema', { stream: stream.name });
      continue;
    }
    const drift = schema ? driftOf(schema, stream) : { removed: [], added: [], problems: [] };
    if (
      ctx.schemaChanges === 'propagate' &&
      schema &&
      !drift.problems.length &&
      (drift.removed.length || drift.added.length)
    ) {
      // Each stream adopts on its own: one whose adoption does not fit is held back, the others run.
      let adopted: { stream: StreamDefinition; applied: { added: string[]; removed: string[] } };
      try {
        const { stream: next, applied } = propagate(schema, stream, drift);
        adopted = {
          stream: parseStreams({ streams: [next] }, `stream ${stream.name} as adopted`)[0],
          applied,
        };
      } catch (err) {
        out.streams.push(stream);
        out.blocked[stream.name] = {
          code: 'schema_drift',
          message: `${driftMessage(stream.name, drift)} Its adoption did not fit: ${bounded((err as Error).message, 300)}`,
        };
        logger.log('warn', 'schema change not adoptable', { stream: stream.name });
        continue;
      }
      out.streams.push(adopted.stream);
      replaced.set(stream.name, adopted.stream);
      out.changes.push({ stream: stream.name, ...adopted.applied });
      logger.log('info', 'schema change adopted', {
        stream: stream.name,
        count: adopted.applied.added.length + adopted.applied.removed.length,
      });
      continue;
    }
    out.streams.push(stream);
    if (drift.added.length) out.added[stream.name] = drift.added;
    if (drift.removed.length || drift.problems.length) {
      out.blocked[stream.name] = { code: 'schema_drift', message: driftMessage(stream.name, drift) };
      logger.log('warn', 'schema drift', {
        stream: stream.name,
        count: drift.removed.length + drift.problems.length,
      });
    }
  }
  if (replaced.size && base.source !== 'file')
    await ctx.state.writeCatalog(
      ctx.tenant,
      catalogJson(
        base.streams.map((s) => replaced.get(s.name) ?? s),
        new Date(ctx.now()).toISOString(),
      ),
    );
  return { ...out, streams: withPersonalPolicy(out.streams, ctx.personal) };
}
