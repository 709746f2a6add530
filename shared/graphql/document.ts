import { parse, type DocumentNode, type OperationDefinitionNode } from 'graphql';
import { RequestRefused } from '../errors';

/** What the client needs to know of a document before sending it: its operation, and whether it writes. */
export interface Analysed {
  operation: string;
  /** The operation's own name, sent as `operationName`; absent for an anonymous one. */
  name?: string;
  isMutation: boolean;
}

const MAX_CACHED_DOCUMENTS = 200;

/** A document parsed once (a client keeps the last MAX_CACHED_DOCUMENTS): exactly one operation, or refused. */
export function analyseDocument(documents: Map<string, Analysed>, document: string): Analysed {
  let analysed = documents.get(document);
  if (analysed) return analysed;
  let ast: DocumentNode;
  try {
    ast = parse(document);
  } catch (err) {
    throw new RequestRefused(
      'invalid_document',
      `GraphQL document does not parse: ${(err as Error).message}`,
      { cause: err },
    );
  }
  const ops = ast.definitions.filter((d): d is OperationDefinitionNode => d.kind === 'OperationDefinition');
  if (ops.length !== 1)
    throw new RequestRefused(
      'invalid_document',
      `GraphQL document must hold exactly one operation (found ${ops.length})`,
    );
  analysed = {
    operation: ops[0].name?.value ?? `anonymous ${ops[0].operation}`,
    name: ops[0].name?.value,
    isMutation: ops[0].operation === 'mutation',
  };
  if (documents.size >= MAX_CACHED_DOCUMENTS) documents.clear();
  documents.set(document, analysed);
  return analysed;
}
