import {
  getNamedType,
  isObjectType,
  parse,
  TypeInfo,
  validate,
  visit,
  visitWithTypeInfo,
  type GraphQLObjectType,
  type GraphQLSchema,
} from 'graphql';
import { recordPath, type StreamDefinition } from '../streams';
import { fieldsOf, parseDocument, selectionAt } from '../streams/document';
import { editRecordSelection } from './edit';
import { printSelection, selectionOf, type Selected } from './selection';

/**
 * A stream held against the tenant's schema as it is now: fields its document selects that the tenant no longer
 * has (`removed`), fields of its records it does not select that discovery would (`added`), and anything else that
 * no longer validates (`problems`: an argument gone, a type changed). Paths are dotted from the record.
 */
export interface Drift {
  removed: string[];
  added: string[];
  problems: string[];
}

export const noDrift = (d: Drift) => !d.removed.length && !d.added.length && !d.problems.length;

export function driftOf(schema: GraphQLSchema, stream: StreamDefinition): Drift {
  const drift: Drift = { removed: [], added: [], problems: [] };
  const document = parse(stream.document);
  const record = recordPath(stream);
  const inRecord = (path: string[]) =>
    path.length > record.length && record.every((k, i) => path[i] === k)
      ? path.slice(record.length)
      : undefined;

  // Fields the schema does not have, by where they are in the answer.
  const typeInfo = new TypeInfo(schema);
  const keys: string[] = [];
  let recordType: GraphQLObjectType | undefined;
  visit(
    document,
    visitWithTypeInfo(typeInfo, {
      Field: {
        enter(node) {
          keys.push(node.alias?.value ?? node.name.value);
          if (!typeInfo.getFieldDef()) {
            const rel = inRecord(keys);
            if (rel) drift.removed.push(rel.join('.'));
            else
              drift.problems.push(
                `${keys.join('.')}: ${typeInfo.getParentType()?.name ?? '?'} has no field ${node.name.value}`,
              );
            keys.pop();
            return false;
          }
          if (keys.length === record.length && record.every((k, i) => keys[i] === k)) {
            const t = getNamedType(typeInfo.getType() ?? undefined);
            if (t && isObjectType(t)) recordType = t;
          }
          return undefined;
        },
        leave() {
          keys.pop();
        },
      },
    }),
  );
  const removed = new Set(drift.removed);
  let errors: ReadonlyArray<{ message: string }>;
  try {
    errors = validate(schema, document, undefined, { maxErrors: 20 });
  } catch (err) {
    // A schema graphql-js will not validate against (shared/catalog/introspect.ts takes them as valid): this
    // stream's problem, never the run's.
    errors = [{ message: `the document could not be checked: ${(err as Error).message.slice(0, 200)}` }];
  }
  for (const e of errors) {
    if (/^Cannot query field "/.test(e.message)) continue; // named above, by path
    drift.problems.push(e.message);
  }
  const excluded = (a: string) => (stream.exclude ?? []).some((x) => a === x || a.startsWith(`${x}.`));
  if (recordType)
    drift.added = addedFields(selectionOf(recordType), stream).filter((a) => !removed.has(a) && !excluded(a));
  return drift;
}

/** Fields discovery would select that the stream does not: the shallowest path of each. */
function addedFields(proposed: Selected[], stream: StreamDefinition): string[] {
  const doc = parseDocument(stream.document);
  if (typeof doc === 'string') return [];
  const set = selectionAt(doc, recordPath(stream));
  if (!set) return [];
  const out: string[] = [];
  const compare = (want: Selected[], have: ReturnType<typeof fieldsOf>, prefix: string) => {
    for (const w of want) {
      const h = have.find((x) => x.name === w.name);
      if (!h) out.push(`${prefix}${w.name}`);
      else if (w.children && h.selectionSet)
        compare(w.children, fieldsOf(h.selectionSet, doc.fragments), `${prefix}${w.name}.`);
    }
  };
  compare(proposed, fieldsOf(set, doc.fragments), '');
  return out;
}

/**
 * The stream adjusted to the schema (SYNC_SCHEMA_CHANGES=propagate): removed fields taken out, added ones put in
 * with the selection discovery would give them. `problems` cannot be adjusted: the stream stays as it is.
 */
export function propagate(
  schema: GraphQLSchema,
  stream: StreamDefinition,
  drift: Drift,
): { stream: StreamDefinition; applied: { added: string[]; removed: string[] } } {
  const path = recordPath(stream);
  let recordType: GraphQLObjectType | undefined;
  const typeInfo = new TypeInfo(schema);
  const keys: string[] = [];
  visit(
    parse(stream.document),
    visitWithTypeInfo(typeInfo, {
      Field: {
        enter(node) {
          keys.push(node.alias?.value ?? node.name.value);
          if (keys.length === path.length && path.every((k, i) => keys[i] === k)) {
            const t = getNamedType(typeInfo.getType() ?? undefined);
            if (t && isObjectType(t)) recordType = t;
          }
        },
        leave() {
          keys.pop();
        },
      },
    }),
  );
  const proposed = recordType ? selectionOf(recordType) : [];
  const find = (dotted: string): Selected | undefined => {
    let level = proposed;
    let hit: Selected | undefined;
    for (const k of dotted.split('.')) {
      hit = level.find((s) => s.name === k);
      level = hit?.children ?? [];
    }
    return hit;
  };
  const add = drift.added.flatMap((a) => {
    const hit = find(a);
    const at = a.split('.').slice(0, -1);
    return hit ? [{ at, selection: printSelection([hit]), name: a }] : [];
  });
  const remove = drift.removed.map((r) => r.split('.'));
  const { document } = editRecordSelection(stream.document, path, { remove, add });
  return {
    stream: { ...stream, document },
    applied: { added: add.map((a) => a.name), removed: drift.removed },
  };
}

/** A field named in "Cannot query field" errors of a first page (when introspection is refused), by its name. */
export function removedFromErrors(messages: string[]): Array<{ field: string; type: string }> {
  return messages.flatMap((m) => {
    const hit = /Cannot query field "([^"]+)" on type "([^"]+)"/.exec(m);
    return hit ? [{ field: hit[1], type: hit[2] }] : [];
  });
}

/**
 * The problems of the tenant's schema this stream's document touches: those about a type its selection passes
 * through (a type without fields, say). The other problems hold back no stream that does not read there.
 */
export function invalidTouched(
  schema: GraphQLSchema,
  stream: StreamDefinition,
  problems: ReadonlyArray<{ type?: string; message: string }>,
): Array<{ type?: string; message: string }> {
  if (!problems.length) return [];
  const types = new Set<string>();
  const typeInfo = new TypeInfo(schema);
  visit(
    parse(stream.document),
    visitWithTypeInfo(typeInfo, {
      Field: {
        enter() {
          const parent = typeInfo.getParentType();
          if (parent) types.add(parent.name);
          const t = getNamedType(typeInfo.getType() ?? undefined);
          if (t) types.add(t.name);
        },
      },
    }),
  );
  return problems.filter((p) => p.type !== undefined && types.has(p.type));
}
