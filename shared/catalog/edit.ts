import {
  Kind,
  parse,
  print,
  type FieldNode,
  type OperationDefinitionNode,
  type SelectionNode,
  type SelectionSetNode,
} from 'graphql';

/**
 * Edits a stream's document where its records are selected: fields taken out (a field the credential may not read,
 * one the tenant removed) or put in (one the tenant added). Paths are response keys from `data` to the record,
 * then from the record to the field. Fields reached through fragments are left as they are (the edit says so).
 */
export function editRecordSelection(
  document: string,
  recordPath: string[],
  edit: { remove?: string[][]; add?: Array<{ at: string[]; selection: string }> },
): { document: string; missed: string[] } {
  const doc = parse(document);
  const missed: string[] = [];
  const additions = (edit.add ?? []).map((a) => ({
    at: a.at,
    fields: (parse(`{ ${a.selection} }`).definitions[0] as OperationDefinitionNode).selectionSet.selections,
  }));

  const keyOf = (f: FieldNode) => f.alias?.value ?? f.name.value;

  /** Edits the record's selection set: removals by path, then additions at their path. */
  const inRecord = (set: SelectionSetNode, prefix: string[]): SelectionSetNode => {
    const here = (edit.remove ?? []).filter(
      (r) => r.length === prefix.length + 1 && prefix.every((p, i) => r[i] === p),
    );
    let selections: SelectionNode[] = set.selections.flatMap((s): SelectionNode[] => {
      if (s.kind !== Kind.FIELD) return [s];
      const key = keyOf(s);
      if (here.some((r) => r[r.length - 1] === key)) return [];
      if (!s.selectionSet) return [s];
      const deeper =
        (edit.remove ?? []).some(
          (r) => r.length > prefix.length + 1 && [...prefix, key].every((p, i) => r[i] === p),
        ) ||
        additions.some((a) => a.at.length > prefix.length && [...prefix, key].every((p, i) => a.at[i] === p));
      if (!deeper) return [s];
      const inner = inRecord(s.selectionSet, [...prefix, key]);
      return inner.selections.length ? [{ ...s, selectionSet: inner }] : [];
    });
    for (const a of additions.filter(
      (x) => x.at.length === prefix.length && x.at.every((p, i) => prefix[i] === p),
    ))
      for (const f of a.fields)
        if (!selections.some((s) => s.kind === Kind.FIELD && f.kind === Kind.FIELD && keyOf(s) === keyOf(f)))
          selections = [...selections, f];
    return { ...set, selections };
  };

  /** Follows the record path through fields to the record's selection set. */
  const toRecord = (set: SelectionSetNode, rest: string[]): SelectionSetNode => {
    if (!rest.length) return inRecord(set, []);
    let found = false;
    const selections = set.selections.map((s) => {
      if (s.kind !== Kind.FIELD || keyOf(s) !== rest[0] || !s.selectionSet) return s;
      found = true;
      return { ...s, selectionSet: toRecord(s.selectionSet, rest.slice(1)) };
    });
    if (!found) missed.push(`${recordPath.join('.')} (through a fragment, or not selected)`);
    return { ...set, selections };
  };

  const edited = {
    ...doc,
    definitions: doc.definitions.map((d) =>
      d.kind === Kind.OPERATION_DEFINITION ? { ...d, selectionSet: toRecord(d.selectionSet, recordPath) } : d,
    ),
  };
  return { document: print(edited), missed };
}
