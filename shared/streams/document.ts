import {
  Kind,
  parse,
  type DocumentNode,
  type FragmentDefinitionNode,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';

/**
 * What a stream's document holds, read from its syntax alone (no schema needed): its variables, and the
 * selection under a path of response keys (aliases included; fragments followed).
 */

export interface SelectedField {
  /** The response key: the alias, else the field's name. */
  key: string;
  name: string;
  selectionSet?: SelectionSetNode;
}

export function fieldsOf(
  set: SelectionSetNode,
  fragments: Map<string, FragmentDefinitionNode>,
  seen = new Set<string>(),
): SelectedField[] {
  const out: SelectedField[] = [];
  for (const s of set.selections) {
    if (s.kind === Kind.FIELD)
      out.push({ key: s.alias?.value ?? s.name.value, name: s.name.value, selectionSet: s.selectionSet });
    else if (s.kind === Kind.INLINE_FRAGMENT) out.push(...fieldsOf(s.selectionSet, fragments, seen));
    else if (!seen.has(s.name.value)) {
      seen.add(s.name.value);
      const f = fragments.get(s.name.value);
      if (f) out.push(...fieldsOf(f.selectionSet, fragments, seen));
    }
  }
  return out;
}

export interface ParsedDocument {
  document: DocumentNode;
  operation: OperationDefinitionNode;
  fragments: Map<string, FragmentDefinitionNode>;
  variables: Set<string>;
}

/** The document's one operation, or why it has none. */
export function parseDocument(text: string): ParsedDocument | string {
  let document: DocumentNode;
  try {
    document = parse(text, { maxTokens: 100_000 });
  } catch (err) {
    return (err as Error).message;
  }
  const operations = document.definitions.filter(
    (d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION,
  );
  if (operations.length !== 1) return `must hold exactly one operation (it holds ${operations.length})`;
  const [operation] = operations;
  if (operation.operation !== 'query') return `must be a query (it is a ${operation.operation})`;
  return {
    document,
    operation,
    fragments: new Map(
      document.definitions
        .filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION)
        .map((f) => [f.name.value, f]),
    ),
    variables: new Set((operation.variableDefinitions ?? []).map((v) => v.variable.name.value)),
  };
}

/** The selection set at `path` (response keys from `data`); a leaf answers null, a missing key undefined. */
export function selectionAt(doc: ParsedDocument, path: string[]): SelectionSetNode | null | undefined {
  let set: SelectionSetNode | undefined = doc.operation.selectionSet;
  for (let i = 0; i < path.length; i++) {
    if (!set) return undefined;
    const field: SelectedField | undefined = fieldsOf(set, doc.fragments).find((f) => f.key === path[i]);
    if (!field) return undefined;
    if (!field.selectionSet) return i === path.length - 1 ? null : undefined;
    set = field.selectionSet;
  }
  return set;
}

/**
 * The keys a record of the stream carries by its selection (aliases as answered), at `path` from `data` — what a
 * Parquet file's columns may be; undefined when the document does not say (a record that is a scalar).
 */
export function recordKeys(document: string, path: string[]): string[] | undefined {
  const doc = parseDocument(document);
  if (typeof doc === 'string') return undefined;
  const set = selectionAt(doc, path);
  return set ? [...new Set(fieldsOf(set, doc.fragments).map((f) => f.key))] : undefined;
}

interface StreamShape {
  document: string;
  pagination: string;
  paths: Record<string, unknown>;
  idPath: string | string[];
  incremental?: { variable: string; field: string; also?: Record<string, unknown> };
  parent?: { variable: string; as: string };
}

const split = (p: string) => (p ? p.split('.') : []);

/**
 * What is wrong with a stream's document for its paging and paths: each problem names the field of the stream
 * definition (`paths.endCursor`, `incremental.variable`…). The schema is not needed: a path the document does
 * not select can never be in its answer, and a variable it does not declare can never be sent.
 */
export function documentProblems(s: StreamShape): Array<{ path: string[]; message: string }> {
  const doc = parseDocument(s.document);
  if (typeof doc === 'string') return [{ path: ['document'], message: doc }];
  const problems: Array<{ path: string[]; message: string }> = [];
  const declared = (field: string, name: unknown) => {
    if (typeof name === 'string' && !doc.variables.has(name))
      problems.push({ path: ['paths', field], message: `$${name} is not declared by the document` });
  };
  const variables: Record<string, string[]> = {
    cursor: ['pageSizeVariable', 'cursorVariable', 'totalVariable'],
    offset: ['limitVariable', 'offsetVariable'],
    page: ['pageVariable', 'perPageVariable'],
    token: ['limitVariable', 'tokenVariable'],
    none: [],
  };
  for (const field of variables[s.pagination] ?? []) declared(field, s.paths[field]);
  if (s.incremental && !doc.variables.has(s.incremental.variable))
    problems.push({
      path: ['incremental', 'variable'],
      message: `$${s.incremental.variable} is not declared by the document`,
    });
  for (const name of Object.keys(s.incremental?.also ?? {}))
    if (!doc.variables.has(name))
      problems.push({
        path: ['incremental', 'also', name],
        message: `$${name} is not declared by the document`,
      });
  if (s.parent && !doc.variables.has(s.parent.variable))
    problems.push({
      path: ['parent', 'variable'],
      message: `$${s.parent.variable} is not declared by the document`,
    });

  const records = split(String(s.paths.records ?? ''));
  const list = selectionAt(doc, records);
  if (!list) {
    problems.push({
      path: ['paths', 'records'],
      message: `${records.join('.')} is not a selection of the document`,
    });
    return problems;
  }
  const node = split(String(s.paths.node ?? ''));
  const record = node.length ? selectionAt(doc, [...records, ...node]) : list;
  if (!record) {
    problems.push({
      path: ['paths', 'node'],
      message: `${[...records, ...node].join('.')} is not a selection of the document`,
    });
    return problems;
  }
  const leaf = (field: string, p: unknown) => {
    if (typeof p !== 'string') return;
    if (selectionAt(doc, split(p)) !== null)
      problems.push({ path: ['paths', field], message: `${p} is not a field the document selects` });
  };
  for (const field of ['hasNextPage', 'endCursor', 'total', 'totalPages']) leaf(field, s.paths[field]);
  const inRecord = (where: string[], p: string) => {
    if (selectionAt(doc, [...records, ...node, ...split(p)]) !== null)
      problems.push({ path: where, message: `${p} is not a field the document selects in each record` });
  };
  // A child stream's records carry their parent's key (`parent.as`): the app adds it, the document does not select it.
  for (const p of Array.isArray(s.idPath) ? s.idPath : s.idPath ? [s.idPath] : [])
    if (p !== s.parent?.as) inRecord(['idPath'], p);
  if (s.incremental) inRecord(['incremental', 'field'], s.incremental.field);
  return problems;
}
