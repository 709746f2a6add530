import {
  getNamedType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  type GraphQLArgument,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLObjectType,
} from 'graphql';
import { isPlainLeaf } from './leaf';
import type { Selected } from './selection';

/**
 * How a collection can be read incrementally, found in its field's arguments (docs/sync.md, "Incremental passes"), in
 * this order of preference:
 *
 * 1. an argument that takes the "changed since" time (`updatedSince`, `modifiedAfter`, `since`);
 * 2. a filter input that can say "changed at or after" for the record's change time — Hasura's
 *    `where: {updated_at: {_gte}}`, PostGraphile's connection filter `filter: {updatedAt: {greaterThanOrEqualTo}}`,
 *    json-graphql-server's `filter: {updated_at_gte}` — camelCase or snake_case alike;
 * 3. an ordering by the change time, newest first — PostGraphile's `orderBy: [UPDATED_AT_DESC]`, Hasura's
 *    `order_by: {updated_at: desc}` — read until the last pass's mark.
 *
 * The record field must be one the stream selects: it is what the pass keeps as its mark.
 */
export interface IncrementalChoice {
  arg: GraphQLArgument;
  field: string;
  kind: 'since' | 'filter' | 'order';
  value?: unknown;
}

type Field = GraphQLField<unknown, unknown>;

const SINCE_ARG =
  /^(updated|changed|modified)(Since|After|From)$|^since$|^(updated|changed|modified)_(since|after|from)$/i;
/** A record's change time: `updatedAt`, `updated_at`, `lastModified`, `modified_on`… */
export const CHANGED_FIELD =
  /^(updated|changed|modified|last_?modified|last_?changed|last_?updated)(_?(at|on|date|time))?$/i;
const FILTER_ARGS = ['where', 'filter', 'condition', 'filters'];
const ORDER_ARGS = ['orderBy', 'order_by', 'order', 'sort'];
/** The comparison that says "at or after" (preferred: a record stamped the instant of the mark is read again). */
const AT_OR_AFTER = ['_gte', 'greaterThanOrEqualTo', 'gte', '_gt', 'greaterThan', 'gt'];

const inputType = (t: GraphQLInputType) => getNamedType(t);

/** The record's change-time field among those selected. */
function changedField(record: GraphQLObjectType, selected: Selected[]): string | undefined {
  return Object.values(record.getFields()).find(
    (x) => CHANGED_FIELD.test(x.name) && isPlainLeaf(x) && selected.some((s) => s.name === x.name),
  )?.name;
}

/** `{updated_at: {_gte: "$since"}}`, `{updatedAt: {greaterThanOrEqualTo: "$since"}}`, or `{updated_at_gte: "$since"}`. */
function filterValue(arg: GraphQLArgument, field: string): unknown {
  const input = inputType(arg.type);
  if (!isInputObjectType(input)) return undefined;
  const fields = input.getFields();
  const nested = fields[field] && inputType(fields[field].type);
  if (nested && isInputObjectType(nested)) {
    const op = AT_OR_AFTER.find((o) => nested.getFields()[o]);
    if (op) return { [field]: { [op]: '$since' } };
  }
  for (const suffix of ['_gte', 'Gte', '_gt', 'Gt'])
    if (fields[`${field}${suffix}`]) return { [`${field}${suffix}`]: '$since' };
  return undefined;
}

/** `["UPDATED_AT_DESC"]` (an enum of orderings) or `[{updated_at: desc}]` (an input object of directions). */
function orderValue(arg: GraphQLArgument, field: string): unknown {
  const named = inputType(arg.type);
  const list = isListType(isNonNullType(arg.type) ? arg.type.ofType : arg.type);
  const wrap = (v: unknown) => (list ? [v] : v);
  const upper = field.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase();
  if (isEnumType(named)) {
    const value = named.getValues().find((v) => v.name === `${upper}_DESC`);
    return value ? wrap(value.name) : undefined;
  }
  if (isInputObjectType(named)) {
    const by = named.getFields()[field];
    const direction = by && inputType(by.type);
    if (direction && isEnumType(direction)) {
      const desc = direction.getValues().find((v) => /^desc$/i.test(v.name));
      if (desc) return wrap({ [field]: desc.name });
    }
  }
  return undefined;
}

export function incrementalOf(
  f: Field,
  record: GraphQLObjectType,
  selected: Selected[],
): IncrementalChoice | undefined {
  const field = changedField(record, selected);
  if (!field) return undefined;
  const since = f.args.find(
    (a) => SINCE_ARG.test(a.name) && !isListType(isNonNullType(a.type) ? a.type.ofType : a.type),
  );
  if (since) return { arg: since, field, kind: 'since' };
  for (const name of FILTER_ARGS) {
    const arg = f.args.find((a) => a.name === name && !isNonNullType(a.type));
    const value = arg && filterValue(arg, field);
    if (arg && value) return { arg, field, kind: 'filter', value };
  }
  for (const name of ORDER_ARGS) {
    const arg = f.args.find((a) => a.name === name && !isNonNullType(a.type));
    const value = arg && orderValue(arg, field);
    if (arg && value) return { arg, field, kind: 'order', value };
  }
  return undefined;
}
