import {
  getNamedType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isScalarType,
  type GraphQLArgument,
  type GraphQLEnumType,
  type GraphQLField,
  type GraphQLInputObjectType,
  type GraphQLInputType,
  type GraphQLObjectType,
} from 'graphql';
import { isPlainLeaf } from './leaf';
import type { Selected } from './selection';

/**
 * Every way a collection's field says "changed at or after a time" or "newest first", found in its arguments by rule,
 * not by server (docs/sync.md, "Incremental passes"). The candidates come in order of preference; discovery proves
 * each against the tenant before it chooses one (./prove.ts), and falls back, named, to the next.
 *
 * 1. an argument that takes the time: `updatedSince`, `modifiedAfter`, `since`, `updatedAt_Gte`, `updated_at__gt`…
 * 2. a field of any input object argument: `{updatedAt: {gte}}`, `{updated_at: {_gt}}`, `{updatedAt:
 *    {greaterThanOrEqualTo}}`, `{updated_at_gte}`, `{since}` — any casing, any separator;
 * 3. a search string (`query: "updated_at:>='…'"`), only as a proof allows;
 * 4. an ordering by the change time, newest first: an enum value (`UPDATED_AT_DESC`, `updatedAt_DESC`), a sort input
 *    (`{updatedAt: DESC}`, lists of them), a `{field, direction}` pair, a sort key with `reverse`, or a string
 *    (`"-updated_at"`) — read until the last pass's mark.
 *
 * The record's change field must be one the stream selects: it is what a pass keeps as its mark.
 */
export interface IncrementalChoice {
  arg: GraphQLArgument;
  field: string;
  kind: 'since' | 'filter' | 'order';
  value?: unknown;
  /** Arguments passed beside it on an incremental pass only (a sort key's `reverse: true`). */
  also?: Array<{ arg: GraphQLArgument; value: unknown }>;
  /** How it says it, for the proposal: `updatedAt_Gte: $since`, `orderBy: "-updated_at"`. */
  said: string;
}

type Field = GraphQLField<unknown, unknown>;

/** A record's change time: `updatedAt`, `updated_at`, `lastModified`, `modified_on`… */
export const CHANGED_FIELD =
  /^(updated|changed|modified|last_?modified|last_?changed|last_?updated)(_?(at|on|date|time))?$/i;

/** Lower case, no separators: `updated_at`, `UpdatedAt` and `UPDATED_AT` are one name. */
const norm = (name: string) => name.replace(/[_\-\s]/g, '').toLowerCase();
const snake = (name: string) => name.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();

/** "At or after" first: a record stamped the instant of the mark is read again, never lost. */
const AT_OR_AFTER = ['gte', 'greaterthanorequalto', 'greaterthanorequal', 'ge', 'min', 'from', 'since'];
const AFTER = ['gt', 'greaterthan', 'after'];
const OPS = [...AT_OR_AFTER, ...AFTER];
const opRank = (op: string) => OPS.indexOf(op);
/** A name that says "the change time, compared": `updatedAt_Gte`, `updated_at__gt`, `updatedAfter`, `since`. */
const STEMS = ['updated', 'changed', 'modified', 'lastmodified', 'lastchanged', 'lastupdated'];
const SUFFIXES = ['', 'at', 'on', 'date', 'time'];

/** The comparison a name makes of the change time, or undefined: `updatedAtGte` → `gte`, `since` → `since`. */
function comparison(name: string, field: string): string | undefined {
  const n = norm(name);
  if (n === 'since') return 'since';
  const stems = new Set([norm(field), ...STEMS.flatMap((s) => SUFFIXES.map((x) => s + x))]);
  for (const op of OPS) if (n.endsWith(op) && stems.has(n.slice(0, n.length - op.length))) return op;
  return undefined;
}

const inputOf = (t: GraphQLInputType) => getNamedType(t);
const isList = (t: GraphQLInputType) => isListType(isNonNullType(t) ? t.ofType : t);
const optional = (a: { type: GraphQLInputType; defaultValue?: unknown }) =>
  !isNonNullType(a.type) || a.defaultValue !== undefined;
/** A scalar that can carry a time: String, DateTime, timestamptz, Date… (not a number, a flag or an id). */
const timeScalar = (t: GraphQLInputType) => {
  const named = inputOf(t);
  return isScalarType(named) && !isList(t) && !['Int', 'Float', 'Boolean', 'ID'].includes(named.name);
};

/** The record's change-time field among those selected. */
function changedField(record: GraphQLObjectType, selected: Selected[]): string | undefined {
  return Object.values(record.getFields()).find(
    (x) => CHANGED_FIELD.test(x.name) && isPlainLeaf(x) && selected.some((s) => s.name === x.name),
  )?.name;
}

/** Inside an input object: the paths that compare the change time, best first. */
function filterValues(input: GraphQLInputObjectType, field: string): Array<{ value: unknown; op: string }> {
  const found: Array<{ value: unknown; op: string }> = [];
  for (const f of Object.values(input.getFields())) {
    if (!optional(f)) continue;
    const nested = inputOf(f.type);
    if (norm(f.name) === norm(field) && isInputObjectType(nested) && !isList(f.type)) {
      for (const g of Object.values(nested.getFields())) {
        const op = OPS.find((o) => norm(g.name).replace(/^_+/, '') === o);
        if (op && timeScalar(g.type)) found.push({ value: { [f.name]: { [g.name]: '$since' } }, op });
      }
    }
    const op = comparison(f.name, field);
    if (op && timeScalar(f.type)) found.push({ value: { [f.name]: '$since' }, op });
  }
  return found.sort((a, b) => opRank(a.op) - opRank(b.op));
}

const DESC = /^desc(ending)?$/i;
const descOf = (e: GraphQLEnumType) => e.getValues().find((v) => DESC.test(v.name))?.name;
const ORDER_NAMES = new Set(['orderby', 'order', 'sort', 'sortby', 'ordering', 'sortkey', 'orderings']);

/** Ways an argument orders by the change field, newest first. */
function orderValues(
  f: Field,
  arg: GraphQLArgument,
  field: string,
): Array<Omit<IncrementalChoice, 'arg' | 'field' | 'kind'>> {
  const named = inputOf(arg.type);
  const wrap = (v: unknown) => (isList(arg.type) ? [v] : v);
  const out: Array<Omit<IncrementalChoice, 'arg' | 'field' | 'kind'>> = [];
  if (isEnumType(named)) {
    const desc = named.getValues().find((v) => norm(v.name) === `${norm(field)}desc`);
    if (desc) out.push({ value: wrap(desc.name), said: `${arg.name}: ${desc.name}` });
    // A sort key and a flag that reverses it (`sortKey: UPDATED_AT, reverse: true`).
    const key = named.getValues().find((v) => norm(v.name) === norm(field));
    const reverse = f.args.find(
      (a) => norm(a.name) === 'reverse' && inputOf(a.type).name === 'Boolean' && optional(a),
    );
    if (key && reverse)
      out.push({
        value: wrap(key.name),
        also: [{ arg: reverse, value: true }],
        said: `${arg.name}: ${key.name}, ${reverse.name}: true`,
      });
  } else if (isInputObjectType(named)) {
    const fields = Object.values(named.getFields());
    // `{updatedAt: DESC}`: the field itself, its direction an enum.
    const by = fields.find((x) => norm(x.name) === norm(field));
    const direction = by && inputOf(by.type);
    const desc = direction && isEnumType(direction) ? descOf(direction) : undefined;
    if (by && desc)
      out.push({ value: wrap({ [by.name]: desc }), said: `${arg.name}: {${by.name}: ${desc}}` });
    // `{field: UPDATED_AT, direction: DESC}`.
    const key = fields.find(
      (x) => ['field', 'sort', 'key', 'by'].includes(norm(x.name)) && isEnumType(inputOf(x.type)),
    );
    const dir = fields.find(
      (x) => ['direction', 'order', 'dir'].includes(norm(x.name)) && isEnumType(inputOf(x.type)),
    );
    const keyValue =
      key && (inputOf(key.type) as GraphQLEnumType).getValues().find((v) => norm(v.name) === norm(field));
    const dirValue = dir && descOf(inputOf(dir.type) as GraphQLEnumType);
    if (key && dir && keyValue && dirValue)
      out.push({
        value: wrap({ [key.name]: keyValue.name, [dir.name]: dirValue }),
        said: `${arg.name}: {${key.name}: ${keyValue.name}, ${dir.name}: ${dirValue}}`,
      });
  } else if (inputOf(arg.type).name === 'String' && ORDER_NAMES.has(norm(arg.name))) {
    // Django's OrderingFilter and its kin take the model's field name: snake case first, as the server names it.
    for (const name of [...new Set([snake(field), field])])
      out.push({ value: wrap(`-${name}`), said: `${arg.name}: "-${name}"` });
  }
  return out;
}

/** Every candidate, in order of preference (none where the record has no selected change field). */
export function incrementalCandidates(
  f: Field,
  record: GraphQLObjectType,
  selected: Selected[],
): IncrementalChoice[] {
  const field = changedField(record, selected);
  if (!field) return [];
  const args = f.args.filter(optional);
  const since = args
    .map((arg) => ({ arg, op: comparison(arg.name, field) }))
    .filter((x): x is { arg: GraphQLArgument; op: string } => Boolean(x.op) && timeScalar(x.arg.type))
    .sort((a, b) => opRank(a.op) - opRank(b.op))
    .map(({ arg }): IncrementalChoice => ({ arg, field, kind: 'since', said: `${arg.name}: $since` }));
  const filters = args.flatMap((arg) => {
    const input = inputOf(arg.type);
    if (!isInputObjectType(input)) return [];
    return filterValues(input, field).map(({ value }): IncrementalChoice => ({
      arg,
      field,
      kind: 'filter',
      value: isList(arg.type) ? [value] : value,
      said: `${arg.name}: ${JSON.stringify(value).replace(/"\$since"/g, '$since')}`,
    }));
  });
  // A search string: `query: "updated_at:>='$since'"` (Shopify's syntax), only if the proof holds it to its word.
  const search = args
    .filter((a) => norm(a.name) === 'query' && inputOf(a.type).name === 'String' && !isList(a.type))
    .map((arg): IncrementalChoice => ({
      arg,
      field,
      kind: 'filter',
      value: `${snake(field)}:>='$since'`,
      said: `${arg.name}: "${snake(field)}:>='$since'"`,
    }));
  const orders = args.flatMap((arg) =>
    orderValues(f, arg, field).map((o): IncrementalChoice => ({ arg, field, kind: 'order', ...o })),
  );
  return [...since, ...filters, ...search, ...orders];
}

/** The preferred candidate, unproved (pure discovery, before the tenant is asked). */
export function incrementalOf(
  f: Field,
  record: GraphQLObjectType,
  selected: Selected[],
): IncrementalChoice | undefined {
  return incrementalCandidates(f, record, selected)[0];
}
