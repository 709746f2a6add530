import {
  buildClientSchema,
  getIntrospectionQuery,
  validateSchema,
  type GraphQLSchema,
  type IntrospectionQuery,
} from 'graphql';
import { GraphqlErrors, IntegrationError, UpstreamError } from '../errors';
import type { TenantGraphqlClient } from '../graphql/client';

/**
 * The tenant's schema, read by introspection with the M2M credential — bounded, because a hostile or huge schema
 * must not exhaust memory or time: the answer's size, the number of types and of fields in one type. The type
 * references nest at most as deep as graphql-js's standard query asks (nine levels), whatever the server sends.
 */
export const INTROSPECTION_LIMITS = { bytes: 8 * 1024 * 1024, types: 5_000, fieldsPerType: 1_000 } as const;

const QUERY = getIntrospectionQuery({ descriptions: false, directiveIsRepeatable: false }).replace(
  'query IntrospectionQuery',
  'query TenantSchema',
);

/** How the docs name what to do when introspection is refused. */
export const REFUSED_HELP = 'docs/sync.md, “When introspection is refused”';

export async function introspect(
  graphql: TenantGraphqlClient,
  options: {
    abortSignal?: AbortSignal;
    limits?: Partial<Record<keyof typeof INTROSPECTION_LIMITS, number>>;
  } = {},
): Promise<GraphQLSchema> {
  const limits = { ...INTROSPECTION_LIMITS, ...options.limits };
  let answer: IntrospectionQuery;
  try {
    answer = await graphql.request<IntrospectionQuery>(QUERY, {
      abortSignal: options.abortSignal,
      maxAnswerBytes: limits.bytes,
    });
  } catch (err) {
    // A server that turns introspection off answers with GraphQL errors that say so (or name __schema).
    if (
      err instanceof GraphqlErrors &&
      err.errors.some((e) => /introspection|__schema|__type/i.test(e.message))
    )
      throw new IntegrationError(
        'introspection_refused',
        `The tenant refuses introspection (${err.message.slice(0, 300)}), so its schema cannot be read: write the streams in a file named by SYNC_STREAMS_FILE (${REFUSED_HELP}).`,
        { cause: err },
      );
    if (err instanceof UpstreamError && /more than \d+ bytes/.test(err.message))
      throw new UpstreamError(
        'upstream_malformed',
        graphql.endpoint,
        `the tenant's schema is larger than ${limits.bytes} bytes: write the streams in a file named by SYNC_STREAMS_FILE (${REFUSED_HELP})`,
        { cause: err },
      );
    throw err;
  }
  const schema = answer?.__schema;
  if (!schema || !Array.isArray(schema.types))
    throw new UpstreamError(
      'upstream_malformed',
      graphql.endpoint,
      'the introspection answer has no __schema.types',
    );
  if (schema.types.length > limits.types)
    throw new UpstreamError(
      'upstream_malformed',
      graphql.endpoint,
      `the tenant's schema has ${schema.types.length} types, more than ${limits.types}: write the streams in a file named by SYNC_STREAMS_FILE (${REFUSED_HELP})`,
    );
  for (const t of schema.types)
    if ('fields' in t && Array.isArray(t.fields) && t.fields.length > limits.fieldsPerType)
      throw new UpstreamError(
        'upstream_malformed',
        graphql.endpoint,
        `type ${t.name} has ${t.fields.length} fields, more than ${limits.fieldsPerType}`,
      );
  let built: GraphQLSchema;
  try {
    // Taken as valid: graphql-js refuses to validate any document against a schema with one invalid type (one
    // without fields, say), which servers on other stacks serve. Its problems are found once, below, and only the
    // streams that touch an invalid type are held back (shared/catalog/index.ts).
    built = buildClientSchema(answer, { assumeValid: true });
  } catch (err) {
    throw new UpstreamError(
      'upstream_malformed',
      graphql.endpoint,
      `the introspection answer is not a valid schema: ${(err as Error).message.slice(0, 300)}`,
      { cause: err },
    );
  }
  // validateSchema caches what it finds on the schema (an empty list under assumeValid): a second build, checked.
  const problems = validateSchema(buildClientSchema(answer)).slice(0, 50);
  PROBLEMS.set(
    built,
    problems.map((p) => ({ type: typeNamed(built, p.message), message: p.message.slice(0, 300) })),
  );
  return built;
}

/** What graphql-js finds wrong with a tenant's schema: each problem, and the type it is about when it names one. */
export interface SchemaProblem {
  type?: string;
  message: string;
}

const PROBLEMS = new WeakMap<GraphQLSchema, SchemaProblem[]>();

/** The problems `introspect` found in this schema (none for a schema it did not read). */
export const schemaProblems = (schema: GraphQLSchema): SchemaProblem[] => PROBLEMS.get(schema) ?? [];

/** The first word of a message that names one of the schema's own types (`Type Leeg must define…` → Leeg). */
function typeNamed(schema: GraphQLSchema, message: string): string | undefined {
  for (const m of message.matchAll(/[_A-Za-z][_0-9A-Za-z]*/g)) {
    const t = schema.getType(m[0]);
    if (t && !m[0].startsWith('__') && !['String', 'Int', 'Float', 'Boolean', 'ID'].includes(m[0]))
      return m[0];
  }
  return undefined;
}
