/*
 * What the sandbox's server, its state and its schema shapes all speak of — kept apart from each, so none of them
 * imports another for a word.
 */

/** Who a GraphQL request is from: a person (device login) or an M2M credential. */
export interface Viewer {
  kind: 'person' | 'm2m';
  /** Username for a person; client id for an M2M credential. */
  name: string;
  subject: string;
}

/** What the `schema/…` hooks changed since start: fields gone, fields added, introspection refused. */
export interface SchemaEdits {
  removed: string[];
  added: Array<{ type: string; field: string; fieldType: 'String' | 'Int' | 'Float' | 'Boolean' }>;
  introspection: boolean;
}
