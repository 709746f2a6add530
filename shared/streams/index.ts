import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ConfigError } from '../errors';

/**
 * A stream: one GraphQL document, how its answers are paged, and where things are in them. A tenant's streams are
 * its catalog: discovered from its schema (shared/catalog/), or written by hand in SYNC_STREAMS_FILE
 * (docs/sync.md). Nothing outside a stream's definition knows any tenant's field names.
 */

const path = z.string().min(1);
const variable = z.string().regex(/^[_A-Za-z][_0-9A-Za-z]*$/, 'a GraphQL variable name');

/**
 * Relay-style: `first`/`after`, `hasNextPage`/`endCursor`, records in `edges { node }` or `nodes`. Without
 * `hasNextPage` the list ends at its first empty page — for a server whose pages are full until the last (proved at
 * discovery, ./catalog/page-ends.ts): some answer `hasNextPage` by counting what is left, on every page.
 */
const cursorPaths = z
  .object({
    records: path,
    node: z.string().default(''),
    hasNextPage: path.optional(),
    endCursor: path,
    pageSizeVariable: variable.default('first'),
    cursorVariable: variable.default('after'),
    /** How many records the collection holds, where the answer says (a connection's `totalCount`, a sibling count). */
    total: path.optional(),
    /**
     * A Boolean variable the document asks the total with (`totalCount @include(if: $withTotal)`): true on a pass's
     * first page only, so a server that counts the collection for it does so once a pass, not once a page.
     */
    totalVariable: variable.optional(),
  })
  .strict();

/** `limit`/`offset`, `first`/`skip` and the like: records from a position. `total`, when the answer has one. */
const offsetPaths = z
  .object({
    records: path,
    node: z.string().default(''),
    limitVariable: variable.default('limit'),
    offsetVariable: variable.default('offset'),
    total: path.optional(),
  })
  .strict();

/** Numbered pages: `page`/`perPage` around a list, with a total, a page count or a has-more flag when there is one. */
const pagePaths = z
  .object({
    records: path,
    node: z.string().default(''),
    pageVariable: variable.default('page'),
    perPageVariable: variable.default('perPage'),
    /** The first page's number. */
    firstPage: z.union([z.literal(0), z.literal(1)]).default(1),
    /**
     * Not known yet: pages 0 and 1 were both empty when discovery asked (a new tenant's empty collection). Each run
     * asks again before it reads, until records show where pages start (shared/catalog/probe.ts).
     */
    firstPageUnknown: z.literal(true).optional(),
    total: path.optional(),
    totalPages: path.optional(),
    hasNextPage: path.optional(),
  })
  .strict();

/**
 * A token to the next page around a list (AWS AppSync and Amplify: `limit`, `nextToken`, records in `items`). Only the
 * token says where the list ends: a filtered list may answer short or empty pages before it.
 */
const tokenPaths = z
  .object({
    records: path,
    node: z.string().default(''),
    limitVariable: variable.default('limit'),
    tokenVariable: variable.default('nextToken'),
    /** Where the answer holds the next page's token (null at the end). */
    nextToken: path,
  })
  .strict();

/** One answer holds every record: no paging. */
const nonePaths = z.object({ records: path, node: z.string().default(''), total: path.optional() }).strict();

/** What leaves the app of a personal field: as sent, nothing, or a keyed hash; `default`: SYNC_PERSONAL_DATA's. */
export const PERSONAL_POLICIES = ['keep', 'drop', 'hash', 'default'] as const;
export type PersonalPolicy = (typeof PERSONAL_POLICIES)[number];

export const PAGINATION_KINDS = ['cursor', 'offset', 'page', 'token', 'none'] as const;
export type PaginationKind = (typeof PAGINATION_KINDS)[number];

const common = {
  // At most 63: PostgreSQL keeps 63 bytes of a name, and the postgres sink names each stream's table after it.
  name: z.string().regex(/^[\w-]{1,63}$/, 'letters, digits, dash or underscore (1-63)'),
  document: z.string().min(1),
  /**
   * Inside a record, its stable key: one path, or several (a composite key: the record is known by them together).
   * Empty: the records have none, and each is known by its content — identical records are one, and an update reads
   * as the old content deleted and the new one created.
   */
  idPath: z.union([z.string(), z.array(path).min(2).max(8)]).default('id'),
  pageSize: z.number().int().min(1).max(1000).default(100),
  /**
   * Reads only what changed since the last pass (docs/sync.md, "Incremental passes"): `field` is the record field
   * that holds when each record last changed, and `variable` what the document reads the pass's start from, by
   * `kind`:
   * - `since` (the default): an argument that takes the "changed since" time (`updatedSince: $updatedSince`);
   * - `filter`: a filter input (`where: $where`), given `value` with "$since" replaced by the time wherever it
   *   stands (`{"updated_at": {"_gt": "$since"}}`, `{"updated_at_gt": "$since"}`, a search `"updated_at:>='$since'"`);
   * - `order`: an ordering, given `value` (`["UPDATED_AT_DESC"]`): the pass reads newest first and stops at the
   *   last pass's mark, and checks the order as it reads.
   * A full pass passes nothing: the server's own order and no filter.
   */
  incremental: z
    .object({
      variable,
      field: path,
      kind: z.enum(['since', 'filter', 'order']).optional(),
      value: z.unknown().optional(),
      /** Variables passed beside it on an incremental pass only (a sort key's `{"reverse": true}`). */
      also: z.record(variable, z.unknown()).optional(),
    })
    .strict()
    .refine((i) => (i.kind === 'filter' || i.kind === 'order') === (i.value !== undefined), {
      message: 'a filter or order takes a value (and only they do)',
    })
    .optional(),
  /**
   * A child stream: read once per record of its `parent` stream, whose key (`key`, a path in the parent's record)
   * the document takes as `variable`; each record carries it as `as` (default `parentKey`), and the stream's key
   * includes it (docs/sync.md, "Child streams").
   */
  parent: z
    .object({
      stream: z.string().min(1),
      key: path,
      variable,
      as: z.string().regex(/^\w+$/).default('parentKey'),
    })
    .strict()
    .optional(),
  /**
   * Fields of the record left out on purpose (dotted from the record; one the credential may not read, one not
   * wanted): schema drift does not report them as added, and SYNC_SCHEMA_CHANGES=propagate does not add them.
   */
  exclude: z.array(path).optional(),
  /**
   * Fields holding personal data (dotted from the record) and what leaves the app of each (docs/personal-data.md):
   * `keep` as sent, `drop` never read further than the page, `hash` a keyed HMAC; `default` — what discovery writes —
   * SYNC_PERSONAL_DATA's choice. Applied to each page before change detection, any sink or export.
   */
  personal: z.record(path, z.enum(PERSONAL_POLICIES)).optional(),
};

const definition = z.discriminatedUnion(
  'pagination',
  [
    z.object({ ...common, pagination: z.literal('cursor'), paths: cursorPaths }).strict(),
    z.object({ ...common, pagination: z.literal('offset'), paths: offsetPaths }).strict(),
    z.object({ ...common, pagination: z.literal('page'), paths: pagePaths }).strict(),
    z.object({ ...common, pagination: z.literal('token'), paths: tokenPaths }).strict(),
    z.object({ ...common, pagination: z.literal('none'), paths: nonePaths }).strict(),
  ],
  { error: `must be one of ${PAGINATION_KINDS.join(', ')}` },
);

/** A stream as written: `pagination` may be left out (it is `cursor`, the format before there were others). */
export const streamSchema = z
  .preprocess(
    (v) =>
      v && typeof v === 'object' && !Array.isArray(v) && !('pagination' in v)
        ? { ...v, pagination: 'cursor' }
        : v,
    definition,
  )
  .superRefine((s, ctx) => {
    // graphql loads with the first stream parsed, not at every cold start (npm run bench -- coldstart).
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { documentProblems } = require('./document') as typeof import('./document');
    for (const p of documentProblems(s)) ctx.addIssue({ code: 'custom', path: p.path, message: p.message });
    // What identifies a record, and what its pass reads by, is never hashed or dropped: erase by the key instead.
    const needed = new Map<string, string>([
      ...keyPaths(s).map((k) => [k, 'the key'] as const),
      ...(s.incremental ? [[s.incremental.field, 'the incremental field'] as const] : []),
    ]);
    for (const [field, policy] of Object.entries(s.personal ?? {}))
      if (policy !== 'keep' && needed.has(field))
        ctx.addIssue({
          code: 'custom',
          path: ['personal', field],
          message: `${field} is ${needed.get(field)}: it cannot be ${({ drop: 'dropped', hash: 'hashed', default: 'hashed or dropped' } as Record<string, string>)[policy]} — set it to "keep", or key the stream by another field`,
        });
  });

export type StreamDefinition = z.output<typeof definition>;
export type CursorPaths = z.output<typeof cursorPaths>;

/** The paths of a stream's key: none (its records are known by their content), one, or several. */
export const keyPaths = (s: Pick<StreamDefinition, 'idPath'>): string[] =>
  Array.isArray(s.idPath) ? s.idPath : s.idPath ? [s.idPath] : [];

/** The path from `data` to one record: the list, then the record inside each of its items. */
export const recordPath = (s: StreamDefinition): string[] => [
  ...s.paths.records.split('.'),
  ...(s.paths.node ? s.paths.node.split('.') : []),
];

/**
 * What is wrong with a child stream's parent among the streams it is defined with: it must be another stream of the
 * same file (or catalog), itself not a child (one level), keyed by the one field the child passes.
 */
export function parentProblem(child: StreamDefinition, streams: StreamDefinition[]): string | undefined {
  if (!child.parent) return undefined;
  const parent = streams.find((s) => s.name === child.parent?.stream);
  if (!parent || parent === child)
    return `${child.parent.stream} is not another stream here (known: ${streams
      .filter((s) => s !== child)
      .map((s) => s.name)
      .join(', ')})`;
  if (parent.parent)
    return `${parent.name} is itself a child stream: a child's parent must be read from the root`;
  const keys = keyPaths(parent);
  return keys.length === 1 && keys[0] === child.parent.key
    ? undefined
    : `${parent.name} is keyed by ${keys.join(' + ') || 'its content'}, not by ${child.parent.key}: its records' keys are what the child is read for (set ${parent.name}'s idPath to ${child.parent.key})`;
}

const fileSchema = z.object({ streams: z.array(z.unknown()).min(1) }).strict();

/** Parses streams (a file's, or a stored catalog's); every problem names the stream and the field. */
export function parseStreams(raw: unknown, source: string): StreamDefinition[] {
  const top = fileSchema.safeParse(raw);
  if (!top.success) throw new ConfigError([`${source}: must be { "streams": [ … ] }`], source);
  const problems: string[] = [];
  const out: StreamDefinition[] = [];
  top.data.streams.forEach((item, i) => {
    const r = streamSchema.safeParse(item);
    const label = (item as { name?: unknown })?.name ?? `#${i + 1}`;
    if (!r.success)
      for (const issue of r.error.issues)
        problems.push(
          `${source}: stream ${String(label)}: ${issue.path.join('.') || 'stream'}: ${issue.message}`,
        );
    else out.push(r.data);
  });
  const names = out.map((s) => s.name);
  for (const n of new Set(names.filter((n, i) => names.indexOf(n) !== i)))
    problems.push(`${source}: stream ${n}: name: used twice`);
  for (const s of out) {
    const problem = parentProblem(s, out);
    if (problem) problems.push(`${source}: stream ${s.name}: parent: ${problem}`);
  }
  if (problems.length) throw new ConfigError(problems, source);
  return out;
}

/** The streams of a file in the SYNC_STREAMS_FILE format. */
export function readStreamsFile(file: string): StreamDefinition[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new ConfigError([`${file}: ${(err as Error).message}`], file);
  }
  return parseStreams(parsed, file);
}

/**
 * Narrows a catalog to the names selected (in that order); an unknown name fails naming the known ones and where
 * the selection came from (`from`: SYNC_STREAMS by default, a CLI's `--streams`).
 */
export function selectStreams(
  streams: StreamDefinition[],
  select?: string[],
  options: { from?: string } = {},
): StreamDefinition[] {
  if (!select?.length) return streams;
  const byName = new Map(streams.map((s) => [s.name, s]));
  const unknown = select.filter((n) => !byName.has(n));
  if (unknown.length)
    throw new ConfigError([
      `${options.from ?? 'SYNC_STREAMS'}: unknown stream${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}; known: ${[...byName.keys()].join(', ')}`,
    ]);
  return select.map((n) => byName.get(n) as StreamDefinition);
}
