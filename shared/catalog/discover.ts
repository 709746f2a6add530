import {
  getNamedType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
  type GraphQLArgument,
  type GraphQLField,
  type GraphQLObjectType,
  type GraphQLOutputType,
  type GraphQLSchema,
} from 'graphql';
import { streamSchema, type StreamDefinition } from '../streams';
import {
  countLeaves,
  isPlainLeaf,
  printSelection,
  selectionOf,
  type LeftOut,
  type Selected,
} from './selection';

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
  /** Leaves selected. */
  fields: number;
}

export interface CatalogProposal {
  streams: Proposal[];
  /** Root query fields that are not collections, and why. */
  skipped: Array<{ field: string; reason: string }>;
}

type Field = GraphQLField<unknown, unknown>;

const unwrap = (t: GraphQLOutputType): GraphQLOutputType => (isNonNullType(t) ? t.ofType : t);

const PAGE_ARGS = ['page', 'pageNumber', 'pageNo', 'pageIndex'];
const PER_PAGE_ARGS = ['perPage', 'pageSize', 'per_page', 'size', 'limit', 'first', 'count'];
const OFFSET_ARGS = ['offset', 'skip', 'start', 'from'];
const LIMIT_ARGS = ['limit', 'first', 'take', 'size', 'count', 'pageSize', 'top', 'max'];
const LIST_FIELDS = ['items', 'results', 'data', 'records', 'nodes', 'entries', 'rows', 'list', 'elements'];
const TOTALS = ['total', 'totalCount', 'count', 'totalItems', 'totalResults', 'totalRecords'];
const TOTAL_PAGES = ['totalPages', 'pageCount', 'pages', 'lastPage'];
const HAS_MORE = ['hasNextPage', 'hasMore', 'hasNext', 'more'];
/** Fields a page object may have beside its list. */
const WRAPPER_FIELDS = new Set([
  ...TOTALS,
  ...TOTAL_PAGES,
  ...HAS_MORE,
  ...PAGE_ARGS,
  ...PER_PAGE_ARGS,
  ...OFFSET_ARGS,
  'pageInfo',
  'cursor',
  'nextCursor',
]);
const KEY_NAMES = ['uuid', 'guid', 'key', 'code', 'slug', 'externalId', 'identifier', 'number'];
const SINCE_ARG = /^(updated|changed|modified)(Since|After|From)$|^since$/i;
const CHANGED_FIELD = /^(updated|changed|modified|lastModified|lastChanged|lastUpdated)(At|On|Date|Time)?$/i;

const intArg = (f: Field, names: string[]): GraphQLArgument | undefined =>
  names
    .map((n) => f.args.find((a) => a.name === n))
    .find((a) => a && (getNamedType(a.type).name === 'Int' || isScalarType(getNamedType(a.type))));

const argNamed = (f: Field, names: string[]) =>
  names.map((n) => f.args.find((a) => a.name === n)).find(Boolean);

const fieldOf = (t: GraphQLObjectType, names: string[], test: (f: Field) => boolean) =>
  names.map((n) => t.getFields()[n]).find((f) => f && test(f));

const isInt = (f: Field) => getNamedType(f.type).name === 'Int' && !isListType(unwrap(f.type));
const isBool = (f: Field) => getNamedType(f.type).name === 'Boolean' && !isListType(unwrap(f.type));
const listOfObjects = (f: Field) => {
  const t = unwrap(f.type);
  return isListType(t) && isObjectType(getNamedType(t)) ? (getNamedType(t) as GraphQLObjectType) : undefined;
};

/** The page size a field suggests by its size argument's default, else 100 (within 1–1000). */
function pageSizeOf(arg: GraphQLArgument | undefined): number {
  const d = arg?.defaultValue;
  return typeof d === 'number' && Number.isInteger(d) && d >= 1 && d <= 1000 ? d : 100;
}

interface Shape {
  pagination: StreamDefinition['pagination'];
  /** The selection around the records, with `%RECORD%` where the record's selection goes. */
  around: string;
  paths: Record<string, unknown>;
  record: GraphQLObjectType;
  /** Arguments the document passes: argument name → variable. */
  args: GraphQLArgument[];
  pageSize: number;
}

function shapeOf(f: Field): Shape | string {
  const t = unwrap(f.type);
  const name = f.name;
  const required = f.args.filter((a) => isNonNullType(a.type) && a.defaultValue === undefined);
  if (required.length) return `takes a required argument (${required.map((a) => a.name).join(', ')})`;
  const page = intArg(f, PAGE_ARGS);
  const perPage =
    page &&
    intArg(
      f,
      PER_PAGE_ARGS.filter((n) => n !== page.name),
    );
  const offset = intArg(f, OFFSET_ARGS);
  const limit = offset && intArg(f, LIMIT_ARGS);

  if (isListType(t)) {
    const item = getNamedType(t);
    if (!isObjectType(item)) return 'a list of scalars, not records';
    const base = { around: '%RECORD%', record: item, paths: { records: name } };
    if (offset && limit)
      return {
        ...base,
        pagination: 'offset',
        paths: { ...base.paths, limitVariable: limit.name, offsetVariable: offset.name },
        args: [limit, offset],
        pageSize: pageSizeOf(limit),
      };
    if (page && perPage)
      return {
        ...base,
        pagination: 'page',
        paths: {
          ...base.paths,
          pageVariable: page.name,
          perPageVariable: perPage.name,
          firstPage: firstPageOf(page),
        },
        args: [page, perPage],
        pageSize: pageSizeOf(perPage),
      };
    const unknown = unknownPaging(f);
    if (unknown) return unknown;
    return { ...base, pagination: 'none', args: [], pageSize: 100 };
  }
  if (!isObjectType(t)) return 'a scalar, not records';

  // Relay: `edges { node }` or `nodes`, with `pageInfo { hasNextPage endCursor }` and `first` / `after`.
  const pageInfo = t.getFields().pageInfo;
  const info =
    pageInfo && isObjectType(unwrap(pageInfo.type))
      ? (unwrap(pageInfo.type) as GraphQLObjectType)
      : undefined;
  const first = argNamed(f, ['first']);
  const after = argNamed(f, ['after']);
  if (info?.getFields().hasNextPage && info.getFields().endCursor && first && after) {
    const cursorPaths = {
      hasNextPage: `${name}.pageInfo.hasNextPage`,
      endCursor: `${name}.pageInfo.endCursor`,
      pageSizeVariable: first.name,
      cursorVariable: after.name,
    };
    const edges = t.getFields().edges && listOfObjects(t.getFields().edges);
    const node = edges?.getFields().node;
    const record =
      node && isObjectType(unwrap(node.type)) ? (unwrap(node.type) as GraphQLObjectType) : undefined;
    if (record)
      return {
        pagination: 'cursor',
        around: 'edges { node { %RECORD% } } pageInfo { hasNextPage endCursor }',
        paths: { records: `${name}.edges`, node: 'node', ...cursorPaths },
        record,
        args: [first, after],
        pageSize: pageSizeOf(first),
      };
    const nodes = t.getFields().nodes && listOfObjects(t.getFields().nodes);
    if (nodes)
      return {
        pagination: 'cursor',
        around: 'nodes { %RECORD% } pageInfo { hasNextPage endCursor }',
        paths: { records: `${name}.nodes`, ...cursorPaths },
        record: nodes,
        args: [first, after],
        pageSize: pageSizeOf(first),
      };
  }

  if (info?.getFields().hasNextPage)
    return 'a connection without first/after arguments to page it: write it in SYNC_STREAMS_FILE';

  // An object around a list: numbered pages or offsets, perhaps with a total.
  // A list under another name counts only when the object looks like a page (paging arguments, a total or a
  // has-more flag): an object that merely holds a list (an organisation and its members) is a single object.
  const total = fieldOf(t, TOTALS, isInt);
  const totalPages = fieldOf(t, TOTAL_PAGES, isInt);
  const more = fieldOf(t, HAS_MORE, isBool);
  const lists = Object.values(t.getFields()).filter((x) => listOfObjects(x));
  const candidate =
    fieldOf(t, LIST_FIELDS, (x) => Boolean(listOfObjects(x))) ?? (lists.length === 1 ? lists[0] : undefined);
  // Without paging arguments, only a pure page (the list and its totals) is a collection: an entity with an id,
  // a name and a list of members is a single object.
  const pagingArgs = Boolean((page && perPage) || (offset && limit));
  const pureWrapper = Object.values(t.getFields()).every(
    (x) => x === candidate || WRAPPER_FIELDS.has(x.name),
  );
  const list = candidate && (pagingArgs || pureWrapper) ? candidate : undefined;
  if (!list) return 'a single object, not a collection';
  const record = listOfObjects(list) as GraphQLObjectType;
  const extras = [total, totalPages, more].filter(Boolean).map((x) => (x as Field).name);
  const around = `${list.name} { %RECORD% }${extras.length ? ` ${extras.join(' ')}` : ''}`;
  const records = `${name}.${list.name}`;
  if (page && perPage)
    return {
      pagination: 'page',
      around,
      paths: {
        records,
        pageVariable: page.name,
        perPageVariable: perPage.name,
        firstPage: firstPageOf(page),
        ...(total ? { total: `${name}.${total.name}` } : {}),
        ...(totalPages ? { totalPages: `${name}.${totalPages.name}` } : {}),
        ...(more ? { hasNextPage: `${name}.${more.name}` } : {}),
      },
      record,
      args: [page, perPage],
      pageSize: pageSizeOf(perPage),
    };
  if (offset && limit)
    return {
      pagination: 'offset',
      around,
      paths: {
        records,
        limitVariable: limit.name,
        offsetVariable: offset.name,
        ...(total ? { total: `${name}.${total.name}` } : {}),
      },
      record,
      args: [limit, offset],
      pageSize: pageSizeOf(limit),
    };
  const unknown = unknownPaging(f);
  if (unknown) return unknown;
  return { pagination: 'none', around, paths: { records }, record, args: [], pageSize: 100 };
}

const PAGING_ARGS = new Set([
  ...PAGE_ARGS,
  ...PER_PAGE_ARGS,
  ...OFFSET_ARGS,
  ...LIMIT_ARGS,
  'after',
  'before',
  'cursor',
]);

/**
 * A field that takes paging arguments discovery cannot pair (an offset without a limit it knows, `after` without
 * `pageInfo`, Int arguments by names it does not know): read as one answer, it would stop at the server's first page without a word, so it is not proposed.
 */
function unknownPaging(f: Field): string | undefined {
  // An Int argument by another name is most likely a page size or a position too (`howMany`, `startAt`).
  if (!f.args.some((a) => PAGING_ARGS.has(a.name) || getNamedType(a.type).name === 'Int')) return undefined;
  return `pages in a way discovery does not know (arguments ${f.args.map((a) => a.name).join(', ')}): write it in SYNC_STREAMS_FILE`;
}

/** A page argument whose default is 0 counts from 0; otherwise pages count from 1. */
const firstPageOf = (page: GraphQLArgument) => (page.defaultValue === 0 ? 0 : 1);

/**
 * The record's own key. A field named `id`; else one named as the type's own identifier (`uuid`, `key`, `code`…,
 * `<type>Id`, `<type>Uuid`); else a non-null ID field — unless its name points at another type (`maatregelId` on
 * `Bewijs` is the control an evidence file belongs to: keyed by it, every file of one control would be one record).
 * Such a reference is taken only when nothing else is, and said so.
 */
function keyOf(record: GraphQLObjectType): { path: string; why: string } {
  const fields = record.getFields();
  const scalar = (f: Field | undefined, nonNull = true) =>
    f !== undefined &&
    (!nonNull || isNonNullType(f.type)) &&
    isPlainLeaf(f) &&
    ['String', 'Int', 'ID'].includes(getNamedType(f.type).name);
  const id = fields.id;
  if (id && getNamedType(id.type).name === 'ID' && isPlainLeaf(id))
    return { path: 'id', why: 'id: the record’s ID field' };
  if (scalar(id, false))
    return { path: 'id', why: 'id: a field named id (not of type ID) — check that it is unique' };
  const own = record.name.charAt(0).toLowerCase() + record.name.slice(1);
  const ids = Object.values(fields).filter(
    (f) => isNonNullType(f.type) && getNamedType(f.type).name === 'ID' && isPlainLeaf(f),
  );
  // `somethingId`, `something_id`: a reference to another record, not this one's key (unless it is the type's name).
  const reference = (f: Field) => /^[a-z]\w*?(Id|ID|_id)$/.test(f.name) && !f.name.startsWith(own);
  const plain = ids.find((f) => !reference(f));
  if (plain)
    return {
      path: plain.name,
      why: plain.name.startsWith(own)
        ? `${plain.name}: the record’s own ID field`
        : `${plain.name}: a non-null ID field`,
    };
  const ownNames = [`${own}Uuid`, `${own}Key`, `${own}Code`, ...KEY_NAMES];
  const named = ownNames.map((n) => fields[n]).find((f) => scalar(f));
  if (named)
    return {
      path: named.name,
      why: `${named.name}: no ID field of its own; a non-null ${getNamedType(named.type).name} whose name says it identifies the record — check that it is unique`,
    };
  if (ids[0])
    return {
      path: ids[0].name,
      why: `${ids[0].name}: a non-null ID field, though its name says it refers to another record — check that it is unique to each ${record.name}, or choose another key (idPath) in SYNC_STREAMS_FILE`,
    };
  return {
    path: '',
    why: 'none: the record has no ID or key-like field, so each is known by its content — an update reads as a deletion and a creation, and deletions show only at the end of a full pass',
  };
}

function incrementalOf(f: Field, record: GraphQLObjectType, selected: Selected[]) {
  const arg = f.args.find((a) => SINCE_ARG.test(a.name) && !isListType(unwrap(a.type as GraphQLOutputType)));
  if (!arg) return undefined;
  const field = Object.values(record.getFields()).find(
    (x) => CHANGED_FIELD.test(x.name) && isPlainLeaf(x) && selected.some((s) => s.name === x.name),
  );
  return field ? { arg, field: field.name } : undefined;
}

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

export function proposeCatalog(schema: GraphQLSchema): CatalogProposal {
  const query = schema.getQueryType();
  const out: CatalogProposal = { streams: [], skipped: [] };
  if (!query) return out;
  const used = new Set<string>();
  for (const f of Object.values(query.getFields())) {
    if (f.name.startsWith('__')) continue;
    const shape = shapeOf(f);
    if (typeof shape === 'string') {
      out.skipped.push({ field: f.name, reason: shape });
      continue;
    }
    const leftOut: LeftOut[] = [];
    const selected = selectionOf(shape.record, leftOut);
    if (!selected.length) {
      out.skipped.push({
        field: f.name,
        reason: `its records (${shape.record.name}) have nothing to select`,
      });
      continue;
    }
    const key = keyOf(shape.record);
    const incremental = incrementalOf(f, shape.record, selected);
    const args = [...shape.args, ...(incremental ? [incremental.arg] : [])];
    const name = streamName(f.name, used);
    const variables = args.map((a) => `$${a.name}: ${String(a.type)}`).join(', ');
    const passed = args.map((a) => `${a.name}: $${a.name}`).join(', ');
    const document = `query Sync_${name.replace(/-/g, '_')}${variables ? `(${variables})` : ''} { ${f.name}${passed ? `(${passed})` : ''} { ${shape.around.replace('%RECORD%', printSelection(selected))} } }`;
    const parsed = streamSchema.safeParse({
      name,
      document,
      pagination: shape.pagination,
      paths: shape.paths,
      idPath: key.path,
      pageSize: shape.pageSize,
      ...(incremental ? { incremental: { variable: incremental.arg.name, field: incremental.field } } : {}),
    });
    if (!parsed.success) {
      out.skipped.push({
        field: f.name,
        reason: `its stream would not be valid (${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')})`,
      });
      continue;
    }
    out.streams.push({
      stream: parsed.data as StreamDefinition,
      key: key.why,
      leftOut,
      fields: countLeaves(selected),
    });
  }
  return out;
}
