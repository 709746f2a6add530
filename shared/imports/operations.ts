import { readFile } from 'node:fs/promises';
import {
  getVariableValues,
  Kind,
  parse,
  typeFromAST,
  validate,
  type DocumentNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type TypeNode,
  type VariableDefinitionNode,
} from 'graphql';
import { z } from 'zod';
import { IntegrationError } from '../errors';

/**
 * The mutations an import may run: an allow-list of named documents (IMPORT_OPERATIONS_FILE, else the sandbox's
 * two). A caller names one and sends only variables — never GraphQL of its own.
 */
export interface ImportOperation {
  name: string;
  document: string;
  /** The mutation's root fields (what doctor checks the tenant's schema has). */
  fields: string[];
  variables: readonly VariableDefinitionNode[];
  description?: string;
}

/** Built in for the sandbox's schema (docs/import.md); a real tenant's come from IMPORT_OPERATIONS_FILE. */
export const BUILT_IN_OPERATIONS: Record<string, { document: string; description: string }> = {
  updateKpi: {
    description: "Sets a KPI's value: `{ id, input: { value } }`.",
    document:
      'mutation UpdateKpi($id: ID!, $input: UpdateKpiInput!) { updateKpi(id: $id, input: $input) { id } }',
  },
  updateControl: {
    description: "Sets a control's status: `{ id, input: { status } }`.",
    document:
      'mutation UpdateControl($id: ID!, $input: UpdateControlInput!) { updateControl(id: $id, input: $input) { id } }',
  },
};

const NAME = /^[A-Za-z][\w-]{0,63}$/;

const fileSchema = z.strictObject({
  operations: z
    .record(
      z.string().regex(NAME, 'an operation name: a letter, then letters, digits, _ or - (at most 64)'),
      z.union([
        z.string().min(1),
        z.strictObject({ document: z.string().min(1), description: z.string().max(500).optional() }),
      ]),
    )
    .refine((o) => Object.keys(o).length > 0, 'must name at least one operation'),
});

const invalid = (what: string) =>
  new IntegrationError('operations_invalid', `IMPORT_OPERATIONS_FILE: ${what}`);

/** One allow-listed document, checked: it parses and holds exactly one mutation (fragments allowed). */
export function operationOf(name: string, document: string, description?: string): ImportOperation {
  let ast: DocumentNode;
  try {
    ast = parse(document);
  } catch (err) {
    throw invalid(`operation ${name}: the document does not parse (${(err as Error).message})`);
  }
  const ops = ast.definitions.filter(
    (d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION,
  );
  if (ops.length !== 1 || ops[0].operation !== 'mutation')
    throw invalid(`operation ${name}: the document must hold exactly one mutation (and no query)`);
  return {
    name,
    document,
    description,
    fields: ops[0].selectionSet.selections.flatMap((s) => (s.kind === Kind.FIELD ? [s.name.value] : [])),
    variables: ops[0].variableDefinitions ?? [],
  };
}

/** Without IMPORT_OPERATIONS_FILE outside development: imports are off (nothing may write). */
export const importsDisabled = () =>
  new IntegrationError(
    'imports_disabled',
    'imports are off: no IMPORT_OPERATIONS_FILE names the mutations they may run (the sandbox’s built-in ones load only in development)',
    { status: 403 },
  );

/**
 * The allow-list: the file's operations; without a file, the sandbox's built-in ones where `builtIns` (development,
 * or a command against the local sandbox) — else imports are off (`imports_disabled`).
 */
export async function loadOperations(
  file: string | undefined,
  options: { builtIns: boolean },
): Promise<Map<string, ImportOperation>> {
  if (!file && !options.builtIns) throw importsDisabled();
  if (!file)
    return new Map(
      Object.entries(BUILT_IN_OPERATIONS).map(([n, o]) => [n, operationOf(n, o.document, o.description)]),
    );
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw invalid(`cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw invalid(`${file} is not valid JSON`);
  }
  const parsed = fileSchema.safeParse(json);
  if (!parsed.success)
    throw invalid(
      parsed.error.issues.map((i) => `${['', ...i.path].join('.') || 'file'}: ${i.message}`).join('; '),
    );
  return new Map(
    Object.entries(parsed.data.operations).map(([n, o]) => [
      n,
      typeof o === 'string' ? operationOf(n, o) : operationOf(n, o.document, o.description),
    ]),
  );
}

/**
 * Whether the operation fits the tenant's schema: the problems graphql-js names (none: it fits). A schema graphql-js
 * will not validate against at all (a type without fields somewhere) cannot refuse the operation: the tenant decides.
 */
export function schemaProblems(operation: ImportOperation, schema: GraphQLSchema): string[] {
  try {
    return validate(schema, parse(operation.document), undefined, { maxErrors: 5 }).map((e) => e.message);
  } catch {
    return [];
  }
}

const SCALARS: Record<string, (v: unknown) => boolean> = {
  ID: (v) => typeof v === 'string' || (typeof v === 'number' && Number.isInteger(v)),
  String: (v) => typeof v === 'string',
  Int: (v) => typeof v === 'number' && Number.isInteger(v) && Math.abs(v) <= 2 ** 31 - 1,
  Float: (v) => typeof v === 'number' && Number.isFinite(v),
  Boolean: (v) => typeof v === 'boolean',
};

/** Without the schema (introspection refused): what the document alone says of a value for `type`. */
function documentProblems(type: TypeNode, value: unknown, path: string): string[] {
  if (type.kind === Kind.NON_NULL_TYPE)
    return value === null || value === undefined
      ? [`${path}: required`]
      : documentProblems(type.type, value, path);
  if (value === null || value === undefined) return [];
  if (type.kind === Kind.LIST_TYPE)
    return Array.isArray(value)
      ? value.flatMap((v, i) => documentProblems(type.type, v, `${path}[${i}]`)).slice(0, 5)
      : documentProblems(type.type, value, path);
  const check = SCALARS[type.name.value];
  if (check && !check(value))
    return [`${path}: must be ${type.name.value === 'ID' ? 'an ID' : `a ${type.name.value}`}`];
  // An input object, enum or custom scalar: only the tenant knows; it answers per item.
  if (!check && (typeof value === 'function' || typeof value === 'symbol')) return [`${path}: not JSON`];
  return [];
}

/**
 * What is wrong with one item's variables for the operation (empty: nothing) — with the schema's types when
 * introspection allows (graphql-js coerces them as the server will), else with what the document declares.
 * Variables the operation does not declare are refused: a typo would otherwise be silently dropped.
 */
export function variableProblems(
  operation: ImportOperation,
  variables: Record<string, unknown>,
  schema?: GraphQLSchema,
): string[] {
  const declared = new Set(operation.variables.map((v) => v.variable.name.value));
  const problems = Object.keys(variables)
    .filter((k) => !declared.has(k))
    .map(
      (k) =>
        `$${k}: not a variable of ${operation.name} (it declares ${[...declared].map((d) => `$${d}`).join(', ') || 'none'})`,
    );
  if (schema && operation.variables.every((v) => typeFromAST(schema, v.type as never)))
    return [
      ...problems,
      ...(getVariableValues(schema, operation.variables, variables, { maxErrors: 5 }).errors ?? []).map((e) =>
        e.message.replace(/^Variable "(\$\w+)"/, '$1'),
      ),
    ];
  return [
    ...problems,
    ...operation.variables.flatMap((v) => {
      const name = v.variable.name.value;
      // Absent with a default: the server uses the default.
      if (variables[name] === undefined && v.defaultValue) return [];
      return documentProblems(v.type, variables[name], `$${name}`);
    }),
  ];
}
