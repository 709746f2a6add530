import {
  buildClientSchema,
  getIntrospectionQuery,
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
  try {
    return buildClientSchema(answer, { assumeValid: false });
  } catch (err) {
    throw new UpstreamError(
      'upstream_malformed',
      graphql.endpoint,
      `the introspection answer is not a valid schema: ${(err as Error).message.slice(0, 300)}`,
      { cause: err },
    );
  }
}
