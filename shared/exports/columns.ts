import { ConfigError } from '../errors';
import { recordPath, type StreamDefinition } from '../streams';
import { fieldsOf, parseDocument, selectionAt } from '../streams/document';
import type { SelectionSetNode } from 'graphql';

/**
 * CSV columns come from the stream's query, not from the data: a GraphQL answer holds exactly the selected
 * fields, so the header is known before the first page and no field seen later can be dropped. Nested
 * objects become dotted columns (`owner.name`); lists stay one cell, as JSON.
 */
export function csvColumns(stream: StreamDefinition): string[] {
  const doc = parseDocument(stream.document);
  if (typeof doc === 'string') throw new ConfigError([`stream ${stream.name}: document: ${doc}`]);
  const path = recordPath(stream);
  const set = selectionAt(doc, path);
  if (!set)
    throw new ConfigError([
      `stream ${stream.name}: no selection at ${path.join('.')} in its document, so CSV has no columns`,
    ]);
  const columns: string[] = [];
  const walk = (s: SelectionSetNode, prefix: string) => {
    for (const f of fieldsOf(s, doc.fragments)) {
      if (f.selectionSet) walk(f.selectionSet, `${prefix}${f.key}.`);
      else columns.push(`${prefix}${f.key}`);
    }
  };
  walk(set, '');
  return [...new Set(columns)];
}
