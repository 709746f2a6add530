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
} from 'graphql';
import type { StreamDefinition } from '../streams';

/**
 * How a field lists records, read from its type and arguments: a Relay connection (`first`/`after`, `pageInfo`, a
 * `totalCount`), numbered pages, offsets, or one answer — and where, in its answer, the records, the cursor and a
 * total are. Pure: the field in, its shape (or why it is not a collection) out.
 */
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
const TOKENS = ['nextToken', 'next_token', 'nextPageToken', 'pageToken'];
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
  ...TOKENS,
]);

const intArg = (f: Field, names: string[]): GraphQLArgument | undefined =>
  names
    .map((n) => f.args.find((a) => a.name === n))
    .find((a) => a && (getNamedType(a.type).name === 'Int' || isScalarType(getNamedType(a.type))));

const argNamed = (f: Field, names: string[]) =>
  names.map((n) => f.args.find((a) => a.name === n)).find(Boolean);

const fieldOf = (t: GraphQLObjectType, names: string[], test: (f: Field) => boolean) =>
  names.map((n) => t.getFields()[n]).find((f) => f && test(f));

const isInt = (f: Field) => getNamedType(f.type).name === 'Int' && !isListType(unwrap(f.type));
const isString = (f: Field) => getNamedType(f.type).name === 'String' && !isListType(unwrap(f.type));
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

export interface Shape {
  pagination: StreamDefinition['pagination'];
  /** The selection around the records, with `%RECORD%` where the record's selection goes. */
  around: string;
  paths: Record<string, unknown>;
  record: GraphQLObjectType;
  /** Arguments the document passes: argument name → variable. */
  args: GraphQLArgument[];
  pageSize: number;
  /** Variables of the document's own, beyond the field's arguments (`$withTotal: Boolean = false`). */
  extraVariables?: string[];
  /** A root field beside the collection that counts it (`_allPostsMeta { count }`), selected with it. */
  sibling?: string;
  firstPageUnknown?: boolean;
}

export function shapeOf(f: Field): Shape | string {
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
        ...(page.defaultValue === undefined ? { firstPageUnknown: true } : {}),
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
    // The connection's count, asked on a pass's first page only (a server may count the table for it).
    const counted = t.getFields().totalCount && isInt(t.getFields().totalCount);
    const total = counted
      ? {
          around: ' totalCount @include(if: $withTotal)',
          paths: { total: `${name}.totalCount`, totalVariable: 'withTotal' },
          extraVariables: ['$withTotal: Boolean = false'],
        }
      : { around: '', paths: {}, extraVariables: [] };
    // `nodes` where the server offers it: the same records without an edge (and its cursor) around each.
    const nodes = t.getFields().nodes && listOfObjects(t.getFields().nodes);
    if (nodes)
      return {
        pagination: 'cursor',
        around: `nodes { %RECORD% } pageInfo { hasNextPage endCursor }${total.around}`,
        paths: { records: `${name}.nodes`, ...cursorPaths, ...total.paths },
        record: nodes,
        args: [first, after],
        pageSize: pageSizeOf(first),
        extraVariables: total.extraVariables,
      };
    if (record)
      return {
        pagination: 'cursor',
        around: `edges { node { %RECORD% } } pageInfo { hasNextPage endCursor }${total.around}`,
        paths: { records: `${name}.edges`, node: 'node', ...cursorPaths, ...total.paths },
        record,
        args: [first, after],
        pageSize: pageSizeOf(first),
        extraVariables: total.extraVariables,
      };
  }

  if (info?.getFields().hasNextPage)
    return 'a connection without first/after arguments to page it: write it in SYNC_STREAMS_FILE';

  // A token to the next page (AppSync, Amplify): `items` and `nextToken`, asked with `limit` and `nextToken`.
  const tokenField = fieldOf(t, TOKENS, isString);
  const tokenArg =
    tokenField &&
    TOKENS.map((n) => f.args.find((a) => a.name === n && getNamedType(a.type).name === 'String')).find(
      Boolean,
    );
  const tokenLimit = tokenArg && intArg(f, LIMIT_ARGS);
  const tokenList =
    tokenField &&
    (fieldOf(t, LIST_FIELDS, (x) => Boolean(listOfObjects(x))) ??
      Object.values(t.getFields()).find((x) => listOfObjects(x)));
  if (tokenField && tokenArg && tokenLimit && tokenList)
    return {
      pagination: 'token',
      around: `${tokenList.name} { %RECORD% } ${tokenField.name}`,
      paths: {
        records: `${name}.${tokenList.name}`,
        limitVariable: tokenLimit.name,
        tokenVariable: tokenArg.name,
        nextToken: `${name}.${tokenField.name}`,
      },
      record: listOfObjects(tokenList) as GraphQLObjectType,
      args: [tokenLimit, tokenArg],
      pageSize: pageSizeOf(tokenLimit),
    };

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
      ...(page.defaultValue === undefined ? { firstPageUnknown: true } : {}),
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
  ...TOKENS,
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

/**
 * A page argument whose default is 0 counts from 0, one whose default is 1 from 1; without a default, 1 until the
 * probe has read pages 0 and 1 and compared them (`firstPageUnknown`).
 */
const firstPageOf = (page: GraphQLArgument) => (page.defaultValue === 0 ? 0 : 1);

/**
 * A root field beside a list that counts it: json-graphql-server's `_allPostsMeta { count }`, Hasura's
 * `posts_aggregate { aggregate { count } }`, `postsAggregate` — asked with the list, so a full pass can be held
 * against it. Only one that takes no required argument.
 */
export function siblingCount(
  query: GraphQLObjectType,
  name: string,
  filter?: GraphQLArgument,
): { select: string; total: string } | undefined {
  for (const candidate of [`_${name}Meta`, `${name}_aggregate`, `${name}Aggregate`, `${name}Count`]) {
    const f = query.getFields()[candidate];
    if (!f || f.args.some((a) => isNonNullType(a.type) && a.defaultValue === undefined)) continue;
    // The stream's filter (an incremental pass's "changed since"), where the count takes it too: the count is then
    // of what the pass reads, and its pages end where the records do.
    const same =
      filter && f.args.find((a) => a.name === filter.name && String(a.type) === String(filter.type));
    const called = same ? `${candidate}(${same.name}: $${same.name})` : candidate;
    const t = unwrap(f.type);
    if (isInt(f)) return { select: called, total: candidate };
    if (!isObjectType(t)) continue;
    const count = t.getFields().count;
    if (count && isInt(count)) return { select: `${called} { count }`, total: `${candidate}.count` };
    const aggregate = t.getFields().aggregate;
    const inner = aggregate && unwrap(aggregate.type);
    if (inner && isObjectType(inner) && inner.getFields().count && isInt(inner.getFields().count))
      return { select: `${called} { aggregate { count } }`, total: `${candidate}.aggregate.count` };
  }
  return undefined;
}
