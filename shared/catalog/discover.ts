import {
  getNamedType,
  isInterfaceType,
  isObjectType,
  isScalarType,
  type GraphQLField,
  type GraphQLNamedType,
  type GraphQLObjectType,
  type GraphQLSchema,
} from 'graphql';
import { streamSchema, type StreamDefinition } from '../streams';
import { childCandidates, type ChildCandidate } from './children';
import { incrementalCandidates, type IncrementalChoice } from './incremental';
import { GLOBAL_IDS, keyOf } from './keys';
import { DEFAULT_MAX_STREAMS } from './settings';
import { countLeaves, leavesOf, printSelection, selectionOf, type LeftOut, type Selected } from './selection';
import { personalFields, type PersonalField } from '../personal/fields';
import { shapeOf, siblingCount, type Shape } from './shapes';

/**
 * A catalog proposed from a schema: one stream per root query field that returns a collection, paged however
 * the field pages it (docs/sync.md, "First contact with your tenant"). Never a field with a required argument, a
 * single object, a list of scalars, or a mutation. Pure: the schema in, proposals out.
 */

export interface Proposal {
  stream: StreamDefinition;
  /** Why this key (or why none). */
  key: string;
  /** Fields of the record left out of the selection, and why. */
  leftOut: LeftOut[];
  /** Fields holding personal data, and what kind (marked `default` in the stream's `personal`). */
  personal?: PersonalField[];
  /** Leaves selected. */
  fields: number;
  /** Numbered pages whose page argument has no default: where they start (0 or 1) is found out by reading them. */
  firstPageUnknown?: boolean;
  /** How `stream` reads incrementally, in the schema's words (`updatedAt_Gte: $since`). */
  said?: string;
  /**
   * The other ways to read it, in order of preference, each a whole stream (the last reads whole): discovery proves
   * `stream`'s way against the tenant and falls back through these (./choose.ts). Never stored.
   */
  alternatives?: Array<{ stream: StreamDefinition; said?: string }>;
  /** What discovery found of the incremental ways: the one proved, or why each was not (./choose.ts). */
  incremental?: string;
  /** Where a cursor stream's list ends: at a short page (proved: ./page-ends.ts), or where `hasNextPage` says. */
  pageEnds?: string;
}

/** Past the cap, how many streams are named one by one before the rest are counted. */
const OVER_NAMED = 20;

export interface CatalogProposal {
  streams: Proposal[];
  /** Root query fields that are not collections, and why. */
  skipped: Array<{ field: string; reason: string }>;
}

type Field = GraphQLField<unknown, unknown>;

/**
 * A stream's name from its root field: at most 63 characters (PostgreSQL's names), unique — two fields that share
 * their first 63 characters get `_2`, `_3`… in place of their last ones.
 */
function streamName(field: string, used: Set<string>): string {
  const base = field.replace(/[^\w-]/g, '_').slice(0, 63);
  let name = base;
  for (let n = 2; used.has(name); n++) name = `${base.slice(0, 63 - `_${n}`.length)}_${n}`;
  used.add(name);
  return name;
}

/** Every string of a stream's paths below `prefix` (a child's relation sits inside its parent's lookup). */
const below = (prefix: string, paths: Record<string, unknown>) =>
  Object.fromEntries(
    Object.entries(paths).map(([k, v]) =>
      typeof v === 'string' && ['records', 'hasNextPage', 'endCursor', 'total', 'totalPages'].includes(k)
        ? [k, `${prefix}.${v}`]
        : [k, v],
    ),
  );

interface Built {
  name: string;
  field: Field;
  shape: Shape;
  selected: Selected[];
  key: { path: string | string[]; why: string };
  leftOut: LeftOut[];
  incremental?: IncrementalChoice;
  child?: ChildCandidate;
}

/** The scalar type's name at a dotted path of a record type (through lists and non-nulls), if there is one. */
function scalarAt(type: GraphQLObjectType, path: string[]): string | undefined {
  let t: GraphQLNamedType = type;
  for (const name of path) {
    if (!isObjectType(t) && !isInterfaceType(t)) return undefined;
    const f: GraphQLField<unknown, unknown> | undefined = (t as GraphQLObjectType).getFields()[name];
    if (!f) return undefined;
    t = getNamedType(f.type);
  }
  return isScalarType(t) ? t.name : undefined;
}

/** A stream's definition: its document around the selection, its paging, key and reading kind. */
function streamOf(b: Built): { ok: true; proposal: Proposal } | { ok: false; reason: string } {
  const { shape, child, incremental } = b;
  const args = [
    ...shape.args,
    ...(incremental ? [incremental.arg, ...(incremental.also ?? []).map((a) => a.arg)] : []),
  ];
  const variables = [
    ...(child ? [`$parentKey: ${String(child.lookup.arg.type)}`] : []),
    ...args.map((a) => `$${a.name}: ${String(a.type)}`),
    ...(shape.extraVariables ?? []),
  ].join(', ');
  const passed = args.map((a) => `${a.name}: $${a.name}`).join(', ');
  const collection = `${b.field.name}${passed ? `(${passed})` : ''} { ${shape.around.replace('%RECORD%', printSelection(b.selected))} }`;
  const body = child
    ? `${child.lookup.field.name}(${child.lookup.arg.name}: $parentKey) { ${collection} }`
    : `${collection}${shape.sibling ? ` ${shape.sibling}` : ''}`;
  const document = `query Sync_${b.name.replace(/-/g, '_')}${variables ? `(${variables})` : ''} { ${body} }`;
  const ownKey = Array.isArray(b.key.path) ? b.key.path : b.key.path ? [b.key.path] : [];
  // Personal data marked where it stands (the streams' `personal`), never a key or the incremental field.
  const personal = personalFields(leavesOf(b.selected), [b.name, b.field.name, shape.record.name], {
    scalarOf: (leaf) => scalarAt(shape.record, leaf.split('.')),
    except: [...ownKey, ...(incremental ? [incremental.field] : [])],
  });
  const parsed = streamSchema.safeParse({
    name: b.name,
    document,
    pagination: shape.pagination,
    paths: child ? below(child.lookup.field.name, shape.paths) : shape.paths,
    // A child is known by its parent's key and its own (or its content, which carries its parent's key).
    idPath: child ? (ownKey.length ? ['parentKey', ...ownKey] : '') : b.key.path,
    pageSize: shape.pageSize,
    ...(personal.length ? { personal: Object.fromEntries(personal.map((p) => [p.field, 'default'])) } : {}),
    ...(incremental
      ? {
          incremental: {
            variable: incremental.arg.name,
            field: incremental.field,
            ...(incremental.kind !== 'since' ? { kind: incremental.kind, value: incremental.value } : {}),
            ...(incremental.also?.length
              ? { also: Object.fromEntries(incremental.also.map((a) => [a.arg.name, a.value])) }
              : {}),
          },
        }
      : {}),
    ...(child
      ? {
          parent: {
            stream: child.parent.stream,
            key: child.parent.key,
            variable: 'parentKey',
            as: 'parentKey',
          },
        }
      : {}),
  });
  if (!parsed.success)
    return {
      ok: false,
      reason: `its stream would not be valid (${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')})`,
    };
  return {
    ok: true,
    proposal: {
      stream: parsed.data as StreamDefinition,
      key: child
        ? `parentKey + ${ownKey.length ? ownKey.join(' + ') : 'its content'}: each ${child.record.name} of a ${child.parent.record.name} (${child.parent.stream}) — ${b.key.why}`
        : b.key.why,
      leftOut: b.leftOut,
      fields: countLeaves(b.selected),
      ...(personal.length ? { personal } : {}),
      ...(shape.firstPageUnknown ? { firstPageUnknown: true } : {}),
    },
  };
}

export function proposeCatalog(
  schema: GraphQLSchema,
  options: { maxStreams?: number } = {},
): CatalogProposal {
  const max = options.maxStreams ?? DEFAULT_MAX_STREAMS;
  const query = schema.getQueryType();
  const out: CatalogProposal = { streams: [], skipped: [] };
  if (!query) return out;
  const used = new Set<string>();
  const shapes: Array<{ f: Field; shape: Shape | string }> = Object.values(query.getFields())
    .filter((f) => !f.name.startsWith('__'))
    .map((f) => ({ f, shape: shapeOf(f) }));
  // The stream names first: a to-many relation says which stream reads its records instead of embedding them.
  const roots: Array<{ f: Field; shape: Shape; name: string }> = [];
  for (const { f, shape } of shapes)
    if (typeof shape === 'string') out.skipped.push({ field: f.name, reason: shape });
    else roots.push({ f, shape, name: streamName(f.name, used) });
  const listed = new Map<string, string>();
  for (const r of roots)
    if (!listed.has(r.shape.record.name)) listed.set(r.shape.record.name, `stream ${r.name}`);
  const children = childCandidates(
    schema,
    roots.map((r) => ({ stream: r.name, record: r.shape.record })),
    new Set(listed.keys()),
  ).flatMap((c) => {
    const shape = shapeOf(c.relation);
    return typeof shape === 'string' ? [] : [{ c, shape, name: streamName(c.relation.name, used) }];
  });
  for (const ch of children)
    if (!listed.has(ch.shape.record.name)) listed.set(ch.shape.record.name, `child stream ${ch.name}`);
  const ctx = { schema, readAs: (type: string) => listed.get(type) };
  const build = (f: Field, shape: Shape, name: string, child?: ChildCandidate): void => {
    const leftOut: LeftOut[] = [];
    const key = keyOf(shape.record, schema);
    const keyed = Array.isArray(key.path) ? key.path : [key.path];
    // The server's global id beside a key of the record's own: made from that key, and encoded for every record of
    // every page (PostGraphile: a quarter of its time for a page of `nodeId id sensor value updatedAt`).
    const globalIds = GLOBAL_IDS.filter(
      (g) => !keyed.includes(g) && key.path !== '' && shape.record.getFields()[g],
    );
    const selected = selectionOf(
      shape.record,
      leftOut,
      undefined,
      child ? { ...ctx, parent: { type: child.parent.record, stream: child.parent.stream } } : ctx,
    ).filter((s) => {
      if (!globalIds.includes(s.name) || s.children) return true;
      leftOut.push({
        field: s.name,
        reason: `the server's global id, made from the key (${keyed.join(', ')}) for every record it answers: add it to the stream's document to have it`,
      });
      return false;
    });
    if (!selected.length) {
      out.skipped.push({
        field: f.name,
        reason: `its records (${shape.record.name}) have nothing to select`,
      });
      return;
    }
    // Children are read whole each pass: their parents' passes decide what exists.
    const candidates = child ? [] : incrementalCandidates(f, shape.record, selected);
    // One whole stream per way to read it incrementally, and the last reads it whole.
    const variants = [...candidates, undefined].flatMap((incremental) => {
      // A count beside the list, where the page itself has none: a full pass is held against it.
      const sibling =
        !child && !('total' in shape.paths)
          ? siblingCount(query, f.name, incremental?.kind === 'filter' ? incremental.arg : undefined)
          : undefined;
      const withSibling: Shape = sibling
        ? { ...shape, sibling: sibling.select, paths: { ...shape.paths, total: sibling.total } }
        : shape;
      const built = streamOf({
        name,
        field: f,
        shape: withSibling,
        selected,
        key,
        leftOut,
        incremental,
        child,
      });
      return built.ok ? [{ built, said: incremental?.said }] : [];
    });
    const [chosen, ...rest] = variants;
    if (!chosen || !chosen.built.ok) {
      const failed = streamOf({ name, field: f, shape, selected, key, leftOut, child });
      out.skipped.push({ field: f.name, reason: failed.ok ? 'no valid stream' : failed.reason });
      return;
    }
    out.streams.push({
      ...chosen.built.proposal,
      ...(chosen.said ? { said: chosen.said } : {}),
      ...(rest.length
        ? {
            alternatives: rest.map((v) => ({
              stream: (v.built as { proposal: Proposal }).proposal.stream,
              said: v.said,
            })),
          }
        : {}),
    });
  };
  // Root collections first, then child streams, up to the cap; the rest named (the first of them one by one), never
  // probed: a schema can describe tens of thousands of child streams, each read once per parent record.
  let room = max;
  const over: string[] = [];
  for (const r of roots)
    if (room-- > 0) build(r.f, r.shape, r.name);
    else over.push(r.f.name);
  for (const ch of children)
    if (room-- > 0) build(ch.c.relation, ch.shape, ch.name, ch.c);
    else over.push(`${ch.c.parent.stream}.${ch.c.relation.name} (a child stream)`);
  const why = `past the first ${max} streams (SYNC_MAX_STREAMS): not proposed; raise it, or write the stream in SYNC_STREAMS_FILE`;
  for (const field of over.slice(0, OVER_NAMED)) out.skipped.push({ field, reason: why });
  if (over.length > OVER_NAMED)
    out.skipped.push({
      field: `${over.length - OVER_NAMED} more`,
      reason: `${why} (${over.slice(OVER_NAMED, OVER_NAMED + 5).join(', ')}, …)`,
    });
  return out;
}
