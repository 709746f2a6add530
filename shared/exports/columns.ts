import { Kind, parse, type DocumentNode, type FragmentDefinitionNode, type SelectionSetNode } from 'graphql';
import { ConfigError } from '../errors';
import type { StreamDefinition } from '../streams';

/**
 * CSV columns come from the stream's query, not from the data: a GraphQL answer holds exactly the selected
 * fields, so the header is known before the first page and no field seen later can be dropped. Nested
 * objects become dotted columns (`owner.name`); lists stay one cell, as JSON.
 */
export function csvColumns(stream: StreamDefinition): string[] {
  let doc: DocumentNode;
  try {
    doc = parse(stream.document);
  } catch (err) {
    throw new ConfigError([`stream ${stream.name}: document: ${(err as Error).message}`]);
  }
  const fragments = new Map(
    doc.definitions
      .filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION)
      .map((f) => [f.name.value, f]),
  );
  const op = doc.definitions.find((d) => d.kind === Kind.OPERATION_DEFINITION);
  const path = [
    ...stream.paths.records.split('.'),
    ...(stream.paths.node ? stream.paths.node.split('.') : []),
  ];
  let set: SelectionSetNode | undefined = op && 'selectionSet' in op ? op.selectionSet : undefined;
  for (const key of path) set = set && fieldsOf(set, fragments).find((f) => f.key === key)?.selectionSet;
  if (!set)
    throw new ConfigError([
      `stream ${stream.name}: no selection at ${path.join('.')} in its document, so CSV has no columns`,
    ]);
  const columns: string[] = [];
  const walk = (s: SelectionSetNode, prefix: string) => {
    for (const f of fieldsOf(s, fragments)) {
      if (f.selectionSet) walk(f.selectionSet, `${prefix}${f.key}.`);
      else columns.push(`${prefix}${f.key}`);
    }
  };
  walk(set, '');
  return [...new Set(columns)];
}

function fieldsOf(
  set: SelectionSetNode,
  fragments: Map<string, FragmentDefinitionNode>,
  seen = new Set<string>(),
): Array<{ key: string; selectionSet?: SelectionSetNode }> {
  const out: Array<{ key: string; selectionSet?: SelectionSetNode }> = [];
  for (const s of set.selections) {
    if (s.kind === Kind.FIELD)
      out.push({ key: s.alias?.value ?? s.name.value, selectionSet: s.selectionSet });
    else if (s.kind === Kind.INLINE_FRAGMENT) out.push(...fieldsOf(s.selectionSet, fragments, seen));
    else if (!seen.has(s.name.value)) {
      seen.add(s.name.value);
      const f = fragments.get(s.name.value);
      if (f) out.push(...fieldsOf(f.selectionSet, fragments, seen));
    }
  }
  return out;
}
