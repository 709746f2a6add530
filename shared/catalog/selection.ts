import {
  getNamedType,
  isEnumType,
  isLeafType,
  isNonNullType,
  isObjectType,
  isScalarType,
  type GraphQLField,
  type GraphQLObjectType,
} from 'graphql';

/**
 * What a record's selection holds, built from its type: every scalar, enum and list of them; objects and lists of
 * objects nested up to `SELECTION_DEPTH` levels below the record; never a field that takes a required argument,
 * an interface or union (which would need fragments per type), or a type already on the path (a cycle) — and at
 * most `SELECTION_LEAVES` fields in all, counted before descending: a record whose fields fan out (400 objects of 400
 * objects of 400 scalars: 64 million leaves from a 180 KB schema) is cut there, and what was cut is named.
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

const requiredArgs = (f: GraphQLField<unknown, unknown>) =>
  f.args.filter((a) => isNonNullType(a.type) && a.defaultValue === undefined).map((a) => a.name);

export function selectionOf(
  type: GraphQLObjectType,
  leftOut: LeftOut[] = [],
  at: { depth: number; path: string[]; onPath: Set<string>; budget: { leaves: number } } = {
    depth: 0,
    path: [],
    onPath: new Set([type.name]),
    budget: { leaves: SELECTION_LEAVES },
  },
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
    const required = requiredArgs(f);
    if (required.length) {
      leftOut.push({ field, reason: `takes a required argument (${required.join(', ')})` });
      continue;
    }
    const named = getNamedType(f.type);
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
      const children = selectionOf(named, leftOut, {
        depth: at.depth + 1,
        path: [...at.path, f.name],
        onPath: new Set([...at.onPath, named.name]),
        budget: at.budget,
      });
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

/** A field's type is a scalar or enum, possibly non-null (not a list). */
export function isPlainLeaf(f: GraphQLField<unknown, unknown> | undefined): boolean {
  if (!f) return false;
  const t = isNonNullType(f.type) ? f.type.ofType : f.type;
  return isScalarType(t) || isEnumType(t);
}
