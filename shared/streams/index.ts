import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ConfigError } from '../errors';
import type { ConnectionPaths } from '../graphql/pager';

/**
 * A stream: one GraphQL document plus where things are in its answer. The defaults match the sandbox's
 * schema; the real service's schema differs, so users override or add streams in a file (docs/sync.md).
 */
export const streamSchema = z
  .object({
    // At most 63: PostgreSQL keeps 63 bytes of a name, and the postgres sink names each stream's table after it.
    name: z.string().regex(/^[\w-]{1,63}$/, 'letters, digits, dash or underscore (1-63)'),
    document: z
      .string()
      .min(1)
      .refine((d) => /\bquery\b/.test(d), 'must be a GraphQL query'),
    paths: z
      .object({
        records: z.string().min(1),
        node: z.string().default(''),
        hasNextPage: z.string().min(1),
        endCursor: z.string().min(1),
        pageSizeVariable: z.string().min(1).default('first'),
        cursorVariable: z.string().min(1).default('after'),
      })
      .strict(),
    /** Inside a record, its stable id. */
    idPath: z.string().min(1).default('id'),
    pageSize: z.number().int().min(1).max(1000).default(100),
  })
  .strict();

export type StreamDefinition = z.output<typeof streamSchema> & { paths: ConnectionPaths };

const connection = (field: string, selection: string) =>
  streamSchema.parse({
    name: field,
    document: `query Sync_${field}($first: Int, $after: String) { ${field}(first: $first, after: $after) { edges { node { ${selection} } } pageInfo { hasNextPage endCursor } } }`,
    paths: {
      records: `${field}.edges`,
      node: 'node',
      hasNextPage: `${field}.pageInfo.hasNextPage`,
      endCursor: `${field}.pageInfo.endCursor`,
    },
  }) as StreamDefinition;

const PERSON = 'id name email';

/** The six record kinds of the sandbox (docs/sandbox.md), every field selected. */
export const DEFAULT_STREAMS: readonly StreamDefinition[] = [
  connection(
    'controls',
    `id reference title description framework status owner { ${PERSON} } tags updatedAt`,
  ),
  connection(
    'evidence',
    `id title controlId fileName mimeType sizeBytes uploadedAt uploadedBy { ${PERSON} }`,
  ),
  connection(
    'personnel',
    'id employeeNumber firstName lastName email department jobTitle startDate screening { status date }',
  ),
  connection('kpis', 'id name unit target value period trend'),
  connection('reports', `id title type status period createdAt author { ${PERSON} }`),
  connection('users', 'id name email role active lastLoginAt'),
];

const fileSchema = z.object({ streams: z.array(z.unknown()).min(1) }).strict();

/**
 * The streams in use: defaults, overridden or extended by a streams file, then narrowed by a selection
 * (SYNC_STREAMS). A bad file or an unknown name fails at start-up naming the stream and the field.
 */
export function resolveStreams(options: { file?: string; select?: string[] } = {}): StreamDefinition[] {
  const byName = new Map(DEFAULT_STREAMS.map((s) => [s.name, s]));
  if (options.file) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(options.file, 'utf8'));
    } catch (err) {
      throw new ConfigError([`${options.file}: ${(err as Error).message}`], options.file);
    }
    const top = fileSchema.safeParse(parsed);
    if (!top.success) throw new ConfigError([`${options.file}: must be { "streams": [ … ] }`], options.file);
    const problems: string[] = [];
    top.data.streams.forEach((raw, i) => {
      const r = streamSchema.safeParse(raw);
      const label = (raw as { name?: unknown })?.name ?? `#${i + 1}`;
      if (!r.success)
        for (const issue of r.error.issues)
          problems.push(
            `${options.file}: stream ${String(label)}: ${issue.path.join('.') || 'stream'}: ${issue.message}`,
          );
      else byName.set(r.data.name, r.data as StreamDefinition);
    });
    if (problems.length) throw new ConfigError(problems, options.file);
  }
  if (!options.select?.length) return [...byName.values()];
  const unknown = options.select.filter((n) => !byName.has(n));
  if (unknown.length)
    throw new ConfigError([
      `SYNC_STREAMS: unknown stream${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}; known: ${[...byName.keys()].join(', ')}`,
    ]);
  return options.select.map((n) => byName.get(n) as StreamDefinition);
}
