import {
  getNamedType,
  isLeafType,
  isListType,
  isNonNullType,
  isObjectType,
  type GraphQLField,
  type GraphQLObjectType,
  type GraphQLSchema,
} from 'graphql';
import { isConnection, isKeyed } from './keys';

/**
 * What a record's selection holds, built from its type — the record's own fields: every scalar, enum and list of them;
 * its to-one objects (their own fields, nested up to `SELECTION_DEPTH` levels below the record); lists of value objects
 * (no key, no paging — a report's sections). Never, at any depth, a to-many relation — a field that takes paging
 * arguments, a connection (PostGraphile's `controlsByOwnerId`, with its `totalCount`), a list of keyed records —
 * whose records are their own stream (or a child stream) and move with other records than this one; never a field
 * that takes a required argument, an interface or union (which would need fragments per type), or a type already on
 * the path (a cycle) — and at most `SELECTION_LEAVES` fields in all, counted before descending: a record whose fields
 * fan out (400 objects of 400 objects of 400 scalars: 64 million leaves from a 180 KB schema) is cut there, and what
 * was cut is named.
 */
export const SELECTION_DEPTH = 2;
export const SELECTION_LEAVES = 500;

export interface Selected {
  name: string;
  children?: Selected[];
}

export interface LeftOut {
  /** Dotted, from the record. */
  field: string;
  reason: string;
}

/** What the selection may know beyond the type: the schema (keys), and where a record type's records are read. */
export interface SelectionContext {
  schema?: GraphQLSchema;
  /** The stream a type's records are read in (a root collection, or a child stream), for the reason a relation is left out. */
  readAs?: (typeName: string) => string | undefined;
  /** A child stream's parent: a to-one field of the record that is its parent is left out (its key is carried). */
  parent?: { type: GraphQLObjectType; stream: string };
}

const requiredArgs = (f: GraphQLField<unknown, unknown>) =>
  f.args.filter((a) => isNonNullType(a.type) && a.defaultValue === undefined).map((a) => a.name);

/** Arguments that page a field: one that takes them lists records of its own. */
const PAGING = new Set([
  'first',
  'last',
  'after',
  'before',
  'offset',
  'skip',
  'limit',
  'take',
  'page',
  'perPage',
  'per_page',
  'pageSize',
  'cursor',
]);

/** Why a field of a record is to-many (its records are read elsewhere), or undefined: it belongs to the record. */
function toMany(f: GraphQLField<unknown, unknown>, ctx: SelectionContext): string | undefined {
  const named = getNamedType(f.type);
  const list = isListType(isNonNullType(f.type) ? f.type.ofType : f.type);
  const paged = f.args.some((a) => PAGING.has(a.name));
  const connection = isObjectType(named) && isConnection(named);
  const records = connection ? connectionRecord(named) : isObjectType(named) ? named : undefined;
  const keyedList = list && isObjectType(named) && isKeyed(named, ctx.schema);
  if (!paged && !connection && !keyedList) return undefined;
  const where = records && ctx.readAs?.(records.name);
  const kind = connection
    ? 'to-many (a connection)'
    : paged
      ? 'to-many (paged)'
      : 'to-many (a list of records)';
  return `${kind} — ${where ? `read as ${where}` : `its records (${records?.name ?? named.name}) are not a record’s own fields: read them as a stream of their own, or a child stream in SYNC_STREAMS_FILE`}`;
}

/** The record type a connection lists (`edges { node }` or `nodes`). */
export function connectionRecord(t: GraphQLObjectType): GraphQLObjectType | undefined {
  const f = t.getFields();
  const list = (x: GraphQLField<unknown, unknown> | undefined) => {
    const n = x && getNamedType(x.type);
    return n && isObjectType(n) ? n : undefined;
  };
  const edge = list(f.edges);
  const node = edge && list(edge.getFields().node);
  return node ?? list(f.nodes);
}

export function selectionOf(
  type: GraphQLObjectType,
  leftOut: LeftOut[] = [],
  at: { depth: number; path: string[]; onPath: Set<string>; budget: { leaves: number } } = {
    depth: 0,
    path: [],
    onPath: new Set([type.name]),
    budget: { leaves: SELECTION_LEAVES },
  },
  ctx: SelectionContext = {},
): Selected[] {
  const out: Selected[] = [];
  const all = Object.values(type.getFields());
  for (const [i, f] of all.entries()) {
    const field = [...at.path, f.name].join('.');
    if (at.budget.leaves <= 0) {
      const more = all.length - i - 1;
      leftOut.push({
        field,
        reason: `past the selection budget of ${SELECTION_LEAVES} fields a stream${more ? ` (and the ${more} field${more === 1 ? '' : 's'} after it)` : ''}: select them in SYNC_STREAMS_FILE if you need them`,
      });
      break;
    }
    const many = toMany(f, ctx);
    if (many) {
      leftOut.push({ field, reason: many });
      continue;
    }
    const required = requiredArgs(f);
    if (required.length) {
      leftOut.push({ field, reason: `takes a required argument (${required.join(', ')})` });
      continue;
    }
    const named = getNamedType(f.type);
    if (at.depth === 0 && ctx.parent && named === ctx.parent.type) {
      // The record would change with its parent, and every child of a parent would repeat it.
      leftOut.push({
        field,
        reason: `its parent (read as stream ${ctx.parent.stream}): the parent's key is carried instead`,
      });
      continue;
    }
    if (isLeafType(named)) {
      out.push({ name: f.name });
      at.budget.leaves--;
    } else if (isObjectType(named)) {
      if (at.onPath.has(named.name)) {
        leftOut.push({ field, reason: `a cycle: ${named.name} is already on the path` });
        continue;
      }
      if (at.depth >= SELECTION_DEPTH) {
        leftOut.push({ field, reason: `nested deeper than ${SELECTION_DEPTH} levels` });
        continue;
      }
      const children = selectionOf(
        named,
        leftOut,
        {
          depth: at.depth + 1,
          path: [...at.path, f.name],
          onPath: new Set([...at.onPath, named.name]),
          budget: at.budget,
        },
        ctx,
      );
      if (children.length) out.push({ name: f.name, children });
      else leftOut.push({ field, reason: 'nothing in it can be selected' });
    } else leftOut.push({ field, reason: `an interface or union (${named.name}): select its types by hand` });
  }
  return out;
}

export const printSelection = (s: Selected[]): string =>
  s.map((f) => (f.children ? `${f.name} { ${printSelection(f.children)} }` : f.name)).join(' ');

/** Every leaf of a selection, dotted. */
export function leavesOf(s: Selected[], prefix = ''): string[] {
  return s.flatMap((f) =>
    f.children ? leavesOf(f.children, `${prefix}${f.name}.`) : [`${prefix}${f.name}`],
  );
}

export const countLeaves = (s: Selected[]) => leavesOf(s).length;

export { isPlainLeaf } from './leaf';
