import {
  getNamedType,
  isListType,
  isNonNullType,
  type GraphQLField,
  type GraphQLObjectType,
  type GraphQLSchema,
} from 'graphql';
import { isPlainLeaf } from './leaf';

/**
 * A record's key, read from its type and the schema around it (docs/sync.md, "Keys"), in this order:
 *
 * 1. a field named `id` of any scalar type — ID, String, Int, or a custom scalar such as UUID or BigInt (PostGraphile's
 *    primary keys, Hasura's, most servers');
 * 2. a non-null ID field that does not name another record (`<type>Id` is the record's own; `maatregelId` on `Bewijs`
 *    refers to a control), and not the server's global id;
 * 3. the arguments of a root lookup of the record by all of them — `kpiValueByKpiIdAndPeriod(kpiId, period)`, Hasura's
 *    `kpi_values_by_pk(kpi_id, period)`: its primary key, one field or several (a composite key: idPath a list);
 * 4. a field whose name says it identifies the record (`uuid`, `key`, `code`…);
 * 5. the server's global object id (`nodeId`: the Relay Node id PostGraphile gives every row with a key) — opaque, but
 *    the record's own;
 * 6. a non-null ID field although its name refers to another record, said so;
 * 7. none: each record is known by its content (identical records are one).
 */
export interface KeyChoice {
  path: string | string[];
  why: string;
}

type Field = GraphQLField<unknown, unknown>;

const KEY_NAMES = ['uuid', 'guid', 'key', 'code', 'slug', 'externalId', 'identifier', 'number'];
/** The Relay global id's names: PostGraphile's `nodeId`, and `globalId`. */
export const GLOBAL_IDS = ['nodeId', 'globalId'];

const lower = (s: string) => s.replace(/[_-]/g, '').toLowerCase();

/** The record's fields that a root lookup's arguments name (camelCase or snake_case alike), when all are its own. */
function lookupKey(record: GraphQLObjectType, schema: GraphQLSchema | undefined): string[] | undefined {
  const query = schema?.getQueryType();
  if (!query) return undefined;
  const fields = record.getFields();
  const byName = new Map(Object.values(fields).map((f) => [lower(f.name), f]));
  const candidates: string[][] = [];
  for (const root of Object.values(query.getFields())) {
    const t = isNonNullType(root.type) ? root.type.ofType : root.type;
    if (isListType(t) || getNamedType(t) !== record || !root.args.length) continue;
    // Every argument required, and each one a plain non-null field of the record: the lookup by its key.
    const names: string[] = [];
    for (const a of root.args) {
      const f = byName.get(lower(a.name));
      if (!isNonNullType(a.type) || !f || !isPlainLeaf(f) || !isNonNullType(f.type)) break;
      if (GLOBAL_IDS.includes(f.name)) break;
      names.push(f.name);
    }
    if (names.length === root.args.length) candidates.push(names);
  }
  // The fewest fields: a lookup by the primary key, not one by a wider unique constraint.
  candidates.sort((a, b) => a.length - b.length);
  return candidates[0];
}

/** Each type's key, worked out once: a record's selection asks it of every list it meets. */
const chosen = new WeakMap<GraphQLObjectType, KeyChoice>();

export function keyOf(record: GraphQLObjectType, schema?: GraphQLSchema): KeyChoice {
  let key = chosen.get(record);
  if (!key) chosen.set(record, (key = choose(record, schema)));
  return key;
}

function choose(record: GraphQLObjectType, schema: GraphQLSchema | undefined): KeyChoice {
  const fields = record.getFields();
  const own = record.name.charAt(0).toLowerCase() + record.name.slice(1);
  const id = fields.id;
  if (id && isPlainLeaf(id)) {
    const type = getNamedType(id.type).name;
    return isNonNullType(id.type)
      ? { path: 'id', why: `id: the record’s own ${type} field` }
      : { path: 'id', why: `id: a field named id (${type}, may be null) — check that every record has one` };
  }
  const ids = Object.values(fields).filter(
    (f) =>
      isNonNullType(f.type) &&
      getNamedType(f.type).name === 'ID' &&
      isPlainLeaf(f) &&
      !GLOBAL_IDS.includes(f.name),
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
  const lookup = lookupKey(record, schema);
  if (lookup)
    return lookup.length === 1
      ? { path: lookup[0], why: `${lookup[0]}: the tenant looks a ${record.name} up by it alone` }
      : {
          path: lookup,
          why: `${lookup.join(' + ')}: a key of ${lookup.length} fields — the tenant looks a ${record.name} up by them together`,
        };
  const ownNames = [`${own}Uuid`, `${own}Key`, `${own}Code`, ...KEY_NAMES];
  const scalar = (f: Field | undefined) =>
    f !== undefined &&
    isNonNullType(f.type) &&
    isPlainLeaf(f) &&
    ['String', 'Int', 'ID'].includes(getNamedType(f.type).name);
  const named = ownNames.map((n) => fields[n]).find((f) => scalar(f));
  if (named)
    return {
      path: named.name,
      why: `${named.name}: no ID field of its own; a non-null ${getNamedType(named.type).name} whose name says it identifies the record — check that it is unique`,
    };
  const global = GLOBAL_IDS.map((n) => fields[n]).find((f) => f && isNonNullType(f.type) && isPlainLeaf(f));
  if (global)
    return {
      path: global.name,
      why: `${global.name}: the server’s global id of each ${record.name} (opaque, but the record’s own) — the record shows no key of its own`,
    };
  if (ids[0])
    return {
      path: ids[0].name,
      why: `${ids[0].name}: a non-null ID field, though its name says it refers to another record — check that it is unique to each ${record.name}, or choose another key (idPath) in SYNC_STREAMS_FILE`,
    };
  return {
    path: '',
    why: 'none: the record has no ID or key-like field, so each is known by its content — identical records are one, an update reads as a deletion and a creation, and deletions show only at the end of a full pass',
  };
}

/** Whether a type's records are entities of their own (a key that is not their content): a list of them is to-many. */
export function isKeyed(record: GraphQLObjectType, schema?: GraphQLSchema): boolean {
  return keyOf(record, schema).path !== '';
}

/** Whether an object type is a list of records that a server pages (a Relay connection): never a record's own field. */
export function isConnection(t: GraphQLObjectType): boolean {
  const f = t.getFields();
  return Boolean(f.pageInfo || ((f.edges || f.nodes) && (f.totalCount || f.pageInfo)));
}
