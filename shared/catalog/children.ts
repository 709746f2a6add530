import {
  getNamedType,
  isListType,
  isNonNullType,
  isObjectType,
  type GraphQLArgument,
  type GraphQLField,
  type GraphQLObjectType,
  type GraphQLSchema,
} from 'graphql';
import { isKeyed, keyOf } from './keys';
import { connectionRecord } from './selection';

/**
 * Child streams (docs/sync.md, "Child streams"): a to-many relation whose records the tenant lists nowhere at the root
 * — evidence only as `control.evidence(first, after)`, issues only as `repository.issues` — read once per record of
 * the parent's stream, through the root lookup of the parent by its key (`controlById(id)`, `controls_by_pk(id)`).
 * Found here; the stream is built as a root one is (shared/catalog/discover.ts).
 */
export interface ChildCandidate {
  /** The parent's stream, its record type, and the path of its key (one field). */
  parent: { stream: string; record: GraphQLObjectType; key: string };
  /** The root lookup of the parent, and the argument that takes its key. */
  lookup: { field: GraphQLField<unknown, unknown>; arg: GraphQLArgument };
  /** The relation on the parent's record. */
  relation: GraphQLField<unknown, unknown>;
  /** The child's record type. */
  record: GraphQLObjectType;
}

const lower = (s: string) => s.replace(/[_-]/g, '').toLowerCase();

/** The root field that looks a `record` up by its one key field: its only required argument names that field. */
function lookupBy(
  query: GraphQLObjectType,
  record: GraphQLObjectType,
  key: string,
): ChildCandidate['lookup'] | undefined {
  for (const f of Object.values(query.getFields())) {
    const t = isNonNullType(f.type) ? f.type.ofType : f.type;
    if (isListType(t) || getNamedType(t) !== record) continue;
    const required = f.args.filter((a) => isNonNullType(a.type) && a.defaultValue === undefined);
    if (required.length === 1 && lower(required[0].name) === lower(key))
      return { field: f, arg: required[0] };
  }
  return undefined;
}

/**
 * The record type a to-many relation lists — a connection's, or a list of keyed records (the ones a record's
 * selection leaves out). Undefined: not to-many; a list of value objects (no key) stays in its record.
 */
function relationRecord(
  f: GraphQLField<unknown, unknown>,
  schema: GraphQLSchema,
): GraphQLObjectType | undefined {
  const named = getNamedType(f.type);
  if (!isObjectType(named)) return undefined;
  const connection = connectionRecord(named);
  if (connection) return connection;
  return isListType(isNonNullType(f.type) ? f.type.ofType : f.type) && isKeyed(named, schema)
    ? named
    : undefined;
}

export function childCandidates(
  schema: GraphQLSchema,
  roots: Array<{ stream: string; record: GraphQLObjectType }>,
  listedTypes: Set<string>,
): ChildCandidate[] {
  const query = schema.getQueryType();
  if (!query) return [];
  const out: ChildCandidate[] = [];
  const taken = new Set<string>();
  for (const root of roots) {
    const key = keyOf(root.record, schema).path;
    if (typeof key !== 'string' || !key) continue; // a parent keyed by one field only
    const lookup = lookupBy(query, root.record, key);
    if (!lookup) continue;
    for (const relation of Object.values(root.record.getFields())) {
      const record = relationRecord(relation, schema);
      if (!record || listedTypes.has(record.name)) continue;
      // Another required argument than paging ones: not a plain relation.
      if (relation.args.some((a) => isNonNullType(a.type) && a.defaultValue === undefined)) continue;
      const id = `${root.record.name}.${relation.name}`;
      if (taken.has(id)) continue;
      taken.add(id);
      out.push({ parent: { stream: root.stream, record: root.record, key }, lookup, relation, record });
    }
  }
  return out;
}
