import { readStreamsFile, selectStreams, streamSchema, type StreamDefinition } from '../shared/streams';

/**
 * The sandbox's six streams (docs/sandbox.md), every field selected: what `discover` proposes for the sandbox's
 * default schema, written out for tests and benches that need streams without asking the sandbox for them.
 */
const connection = (field: string, selection: string): StreamDefinition =>
  streamSchema.parse({
    name: field,
    document: `query Sync_${field}($first: Int, $after: String, $updatedSince: String) { ${field}(first: $first, after: $after, updatedSince: $updatedSince) { edges { node { ${selection} } } pageInfo { hasNextPage endCursor } } }`,
    paths: {
      records: `${field}.edges`,
      node: 'node',
      hasNextPage: `${field}.pageInfo.hasNextPage`,
      endCursor: `${field}.pageInfo.endCursor`,
    },
    incremental: { variable: 'updatedSince', field: 'updatedAt' },
  }) as StreamDefinition;

const PERSON = 'id name email';

export const SANDBOX_STREAMS: readonly StreamDefinition[] = [
  connection(
    'controls',
    `id reference title description framework status owner { ${PERSON} } tags updatedAt`,
  ),
  connection(
    'evidence',
    `id title controlId fileName mimeType sizeBytes uploadedAt uploadedBy { ${PERSON} } updatedAt`,
  ),
  connection(
    'personnel',
    'id employeeNumber firstName lastName email department jobTitle startDate screening { status date } updatedAt',
  ),
  connection('kpis', 'id name unit target value period trend updatedAt'),
  connection('reports', `id title type status period createdAt author { ${PERSON} } updatedAt`),
  connection('users', 'id name email role active lastLoginAt updatedAt'),
];

/**
 * For tests and benches: the sandbox's streams (or a file's), narrowed by `select`. The app itself takes its
 * streams from the tenant's catalog (shared/catalog/).
 */
export function resolveStreams(options: { file?: string; select?: string[] } = {}): StreamDefinition[] {
  return selectStreams(options.file ? readStreamsFile(options.file) : [...SANDBOX_STREAMS], options.select);
}
