import { createHash } from 'node:crypto';
import {
  buildASTSchema,
  getOperationAST,
  isObjectType,
  GraphQLError,
  Kind as AstKind,
  parse,
  print,
  visit,
  type DocumentNode,
  type FieldDefinitionNode,
  type ObjectTypeDefinitionNode,
} from 'graphql';
import { createSchema, createYoga, type Plugin } from 'graphql-yoga';
import { COMMON_TYPEDEFS, type Resolvers, type Shape } from './shapes/common';
import { defaultShape } from './shapes/default';
import { oddShape } from './shapes/odd';
import { variedShape } from './shapes/varied';
import { complexityOf } from './limits';
import type { Sandbox } from './state';
import type { SchemaEdits, Viewer } from './types';

export type { SchemaEdits, Viewer } from './types';

export { MAX_PAGE_SIZE } from './shapes/common';

interface Context {
  viewer: Viewer;
}

export const SHAPES: Record<string, Shape> = { default: defaultShape, varied: variedShape, odd: oddShape };
export type ShapeName = keyof typeof SHAPES;

/** The shape's SDL with the edits applied: fields removed from and added to object types (and their extensions). */
export function editedTypeDefs(shape: Shape, edits: SchemaEdits): string {
  const doc = parse(`${COMMON_TYPEDEFS}\n${shape.typeDefs}`);
  const edit = (node: { name: { value: string }; fields?: readonly FieldDefinitionNode[] }) => {
    const type = node.name.value;
    const fields = (node.fields ?? []).filter((f) => !edits.removed.includes(`${type}.${f.name.value}`));
    for (const a of edits.added.filter((x) => x.type === type))
      fields.push(
        (parse(`type X { ${a.field}: ${a.fieldType} }`).definitions[0] as ObjectTypeDefinitionNode)
          .fields![0],
      );
    return { ...node, fields };
  };
  return print(visit(doc, { ObjectTypeDefinition: edit, ObjectTypeExtension: edit }) as DocumentNode);
}

/**
 * Why an edit to the served schema cannot be made (no such type or field, a field that already exists, or a schema
 * left without a valid type), or undefined: the `schema/fields` hook answers 400 rather than break the endpoint.
 */
export function schemaEditProblem(
  sb: Sandbox,
  edit: { type: string; field: string; action: 'remove' | 'add' },
  next: SchemaEdits,
): string | undefined {
  const shape = SHAPES[sb.options.schema] ?? defaultShape;
  const current = buildASTSchema(parse(editedTypeDefs(shape, sb.schemaEdits)));
  const type = current.getType(edit.type);
  if (!type || !isObjectType(type)) return `no object type ${edit.type} in the ${shape.name} schema`;
  const has = edit.field in type.getFields();
  if (edit.action === 'remove' && !has) return `${edit.type} has no field ${edit.field}`;
  if (edit.action === 'add' && has) return `${edit.type} already has ${edit.field}`;
  try {
    buildASTSchema(parse(editedTypeDefs(shape, next)));
  } catch (err) {
    return `the schema would not build: ${(err as Error).message}`;
  }
  return undefined;
}

/** An added field's value: stable per record and field, of its type. */
function addedValue(parent: Record<string, unknown>, field: string, fieldType: string): unknown {
  const key = String(parent.id ?? parent.key ?? parent.uuid ?? JSON.stringify(parent));
  const n = createHash('sha256').update(`${key}|${field}`).digest().readUInt32BE(0);
  if (fieldType === 'Int') return n % 1000;
  if (fieldType === 'Float') return (n % 10_000) / 100;
  if (fieldType === 'Boolean') return n % 2 === 0;
  return `${field}-${n.toString(36)}`;
}

/**
 * Counts operations and refuses mutations for M2M credentials before any resolver runs, so refused
 * mutations never change data.
 */
/**
 * The seed names no complexity limit, but a real service has one: without it one request of thousands of
 * aliased `controls(first: 1000)` took gigabytes and most of a minute. Counted on the document, before it is
 * validated or run: selections (fields and fragment spreads) and connection fields, aliases included.
 */
export const QUERY_LIMITS = { selections: 1_000, connections: 12 } as const;

function tooComplex(document: DocumentNode, connectionFields: Set<string>): string | undefined {
  let selections = 0;
  let connections = 0;
  visit(document, {
    [AstKind.FIELD]: (node) => {
      selections++;
      if (connectionFields.has(node.name.value)) connections++;
    },
    [AstKind.FRAGMENT_SPREAD]: () => {
      selections++;
    },
  });
  if (connections > QUERY_LIMITS.connections)
    return `the request selects ${connections} connections; at most ${QUERY_LIMITS.connections} per request`;
  if (selections > QUERY_LIMITS.selections)
    return `the request has ${selections} selections; at most ${QUERY_LIMITS.selections} per request`;
  return undefined;
}

/** Whether a document asks the schema about itself. */
function introspects(document: DocumentNode): boolean {
  let found = false;
  visit(document, {
    [AstKind.FIELD]: (node) => {
      if (node.name.value === '__schema' || node.name.value === '__type') found = true;
    },
  });
  return found;
}

/** Takes the shape's hidden fields out of an introspection answer, as a server whose type has none would answer. */
function hideFields(data: unknown, hidden: ReadonlyArray<{ type: string; field: string }>): void {
  const d = data as { __schema?: { types?: unknown[] }; __type?: unknown } | null | undefined;
  const types = [...(d?.__schema?.types ?? []), ...(d?.__type ? [d.__type] : [])] as Array<{
    name?: string;
    fields?: Array<{ name: string }> | null;
  }>;
  for (const t of types)
    if (Array.isArray(t.fields))
      t.fields = t.fields.filter((f) => !hidden.some((h) => h.type === t.name && h.field === f.name));
}

function accessPlugin(sb: Sandbox, shape: Shape): Plugin<Context> {
  const connectionFields = new Set(shape.connections);
  const hidden = shape.hiddenFields ?? [];
  return {
    // Before validation, whose overlapping-fields rule is itself quadratic in the number of aliases.
    onValidate({ params, setResult }) {
      if (!sb.schemaEdits.introspection && introspects(params.documentAST)) {
        // As servers that turn it off answer (Apollo Server's wording).
        setResult([
          new GraphQLError(
            'GraphQL introspection is not allowed, but the query contained __schema or __type. To enable introspection, pass introspection: true to ApolloServer in production',
            { extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } },
          ),
        ]);
        return;
      }
      const problem = tooComplex(params.documentAST, connectionFields);
      if (problem) setResult([new GraphQLError(problem, { extensions: { code: 'QUERY_TOO_COMPLEX' } })]);
    },
    onExecute({ args, setResultAndStopExecution }) {
      const op = getOperationAST(args.document, args.operationName ?? undefined);
      const ctx = args.contextValue as Context;
      if (op?.operation === 'mutation' && ctx.viewer.kind === 'm2m') {
        sb.stats.graphql.refused++;
        setResultAndStopExecution({
          data: null,
          errors: [
            new GraphQLError('Mutations are not allowed for M2M credentials: they are read-only', {
              extensions: { code: 'FORBIDDEN' },
            }),
          ],
        });
        return;
      }
      // A ceiling on what a query costs, refused as GraphQL servers refuse it: 200 and an error, nothing run.
      const ceiling = sb.limits.complexity;
      if (ceiling !== undefined) {
        const cost = complexityOf(args.document, (args.variableValues ?? {}) as Record<string, unknown>);
        if (cost > ceiling) {
          sb.stats.graphql.tooComplex++;
          setResultAndStopExecution({
            data: null,
            errors: [
              new GraphQLError(
                `Query has complexity ${cost}, which exceeds the maximum of ${ceiling}. Request fewer records per page`,
                { extensions: { code: 'MAX_COMPLEXITY_EXCEEDED', complexity: cost, maximum: ceiling } },
              ),
            ],
          });
          return;
        }
      }
      if (op?.operation === 'mutation') {
        sb.stats.graphql.mutations++;
        const by = sb.stats.graphql.mutationsByPerson;
        by[ctx.viewer.name] = (by[ctx.viewer.name] ?? 0) + 1;
      } else sb.stats.graphql.queries++;
      const name = op?.name?.value ?? 'anonymous';
      sb.stats.graphql.byOperation[name] = (sb.stats.graphql.byOperation[name] ?? 0) + 1;
      if (hidden.length && introspects(args.document))
        return {
          onExecuteDone: ({ result }) => {
            if ('data' in result) hideFields(result.data, hidden);
          },
        };
      return undefined;
    },
  };
}

function buildYoga(sb: Sandbox) {
  const shape = SHAPES[sb.options.schema] ?? defaultShape;
  const own = shape.resolvers(sb);
  const resolvers: Resolvers = {
    ...own,
    Query: {
      ...own.Query,
      tenant: (_: unknown, { name }: { name: string }) =>
        name === sb.options.tenant ? { name, displayName: sb.displayName() } : null,
      currentTenant: () => ({ name: sb.options.tenant, displayName: sb.displayName() }),
      viewer: (_: unknown, __: unknown, ctx: Context) => ({
        ...ctx.viewer,
        readOnly: ctx.viewer.kind === 'm2m',
      }),
    },
  };
  for (const a of sb.schemaEdits.added)
    resolvers[a.type] = {
      ...resolvers[a.type],
      [a.field]: (parent: Record<string, unknown>) => addedValue(parent, a.field, a.fieldType),
    };
  const schema = createSchema<Context>({ typeDefs: editedTypeDefs(shape, sb.schemaEdits), resolvers });
  return createYoga<Context>({
    schema,
    graphqlEndpoint: '/graphql',
    graphiql: false,
    landingPage: false,
    maskedErrors: true,
    logging: false,
    plugins: [accessPlugin(sb, shape)],
  });
}

/** The sandbox's GraphQL endpoint: its shape's schema, built again whenever a `schema/…` hook edits it. */
export function createGraphql(sb: Sandbox) {
  let built: { version: number; yoga: ReturnType<typeof buildYoga> } | undefined;
  return {
    fetch(request: Request, context: Context) {
      if (!built || built.version !== sb.schemaVersion)
        built = { version: sb.schemaVersion, yoga: buildYoga(sb) };
      return built.yoga.fetch(request, context);
    },
  };
}
