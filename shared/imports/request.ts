import { createHash } from 'node:crypto';
import type { GraphQLSchema } from 'graphql';
import { z } from 'zod';
import { refusedCallbackUrl } from '../net/callback';
import type { ImportOperation } from './operations';

/** One thing to change in the tenant: the caller's id for it, and the operation's variables. */
export interface ImportItem {
  key: string;
  variables: Record<string, unknown>;
}

export interface ImportRequest {
  operation: string;
  items: ImportItem[];
  callbackUrl?: string;
}

/** The largest body read for `max` items: generous per item, never unbounded. */
export const maxBodyBytes = (maxItems: number) => Math.min(64 * 1024 * 1024, 64 * 1024 + maxItems * 8 * 1024);

/** Problems listed in one answer, at most: a 100 000-item body of bad items must not answer megabytes. */
const MAX_PROBLEMS = 50;

const itemSchema = z.strictObject({
  key: z.string({ error: 'must be a string' }).min(1, 'must not be empty').max(200, 'at most 200 characters'),
  variables: z.record(z.string(), z.unknown(), { error: 'must be an object' }).default({}),
});

const bodySchema = (maxItems: number) =>
  z.strictObject({
    operation: z.string({ error: 'must name an operation' }).min(1).max(64),
    items: z
      .array(itemSchema, { error: 'must be an array of { key, variables }' })
      .min(1, 'must hold at least one item')
      .max(maxItems, `at most ${maxItems} items (IMPORTS_MAX_ITEMS)`),
    callbackUrl: z.string({ error: 'must be a string' }).max(2048, 'at most 2048 characters').optional(),
  });

export type ImportParse =
  | { ok: true; value: ImportRequest; operation: ImportOperation }
  | { ok: false; code: 'invalid_request' | 'unknown_operation' | 'operations_invalid'; problems: string[] };

// With graphql (~440 KB) it loads at the first import request, not at every cold start (npm run bench -- coldstart).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const operations = () => require('./operations') as typeof import('./operations');

/** The body's shape alone — JSON, the fields, their types and counts — with no allow-list or schema consulted. */
export function parseImportShape(
  text: string,
  maxItems: number,
): { ok: true; value: ImportRequest } | { ok: false; problems: string[] } {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { ok: false, problems: ['body: not valid JSON'] };
  }
  const result = bodySchema(maxItems).safeParse(json);
  if (!result.success)
    return {
      ok: false,
      problems: result.error.issues
        .slice(0, MAX_PROBLEMS)
        .map((i) => `${i.path.length ? i.path.join('.') : 'body'}: ${i.message}`),
    };
  const { operation, items, callbackUrl } = result.data;
  return { ok: true, value: { operation, items, callbackUrl } };
}

/**
 * Parses an import's body and checks every item against the operation before anything is accepted: unknown
 * fields, an operation not on the allow-list, the same key twice, variables the operation does not declare or
 * of the wrong type (the schema's types when introspection allows them) — then that the operation itself fits the
 * tenant's schema (`operations_invalid`: the operator's to fix, not the caller's).
 */
export function parseImportRequest(
  text: string,
  options: {
    operations: Map<string, ImportOperation>;
    maxItems: number;
    development: boolean;
    schema?: GraphQLSchema;
  },
): ImportParse {
  const shape = parseImportShape(text, options.maxItems);
  return shape.ok
    ? checkImport(shape.value, options)
    : { ok: false, code: 'invalid_request', problems: shape.problems };
}

/** A body of the right shape checked against the allow-list, the operation's variables and the tenant's schema. */
export function checkImport(
  body: ImportRequest,
  options: { operations: Map<string, ImportOperation>; development: boolean; schema?: GraphQLSchema },
): ImportParse {
  const operation = options.operations.get(body.operation);
  if (!operation)
    return {
      ok: false,
      code: 'unknown_operation',
      problems: [
        `operation: ${JSON.stringify(body.operation)} is not an allowed operation; allowed: ${[...options.operations.keys()].join(', ')}`,
      ],
    };
  const problems: string[] = [];
  const seen = new Map<string, number>();
  const { variableProblems, schemaProblems } = operations();
  for (const [i, item] of body.items.entries()) {
    // Past the first problems the answer says there are more, without building each text.
    if (problems.length > MAX_PROBLEMS) break;
    const first = seen.get(item.key);
    if (first !== undefined)
      problems.push(
        `items.${i}.key: ${JSON.stringify(item.key)} is also the key of items.${first}; keys must be unique`,
      );
    else seen.set(item.key, i);
    for (const p of variableProblems(operation, item.variables, options.schema))
      problems.push(`items.${i}.variables (key ${JSON.stringify(item.key)}): ${p}`);
  }
  if (body.callbackUrl !== undefined) {
    const why = refusedCallbackUrl(body.callbackUrl, { development: options.development });
    if (why) problems.push(`callbackUrl: ${why}`);
  }
  if (problems.length)
    return {
      ok: false,
      code: 'invalid_request',
      problems:
        problems.length > MAX_PROBLEMS
          ? [...problems.slice(0, MAX_PROBLEMS), '… and more (checking stopped after the first 50 problems)']
          : problems,
    };
  const misfit = options.schema ? schemaProblems(operation, options.schema) : [];
  if (misfit.length)
    return {
      ok: false,
      code: 'operations_invalid',
      problems: [
        `operation ${operation.name} does not fit the tenant's schema (${misfit.join('; ')}): fix it in IMPORT_OPERATIONS_FILE (\`tenant-integrations discover\` lists the tenant's mutations)`,
      ],
    };
  return {
    ok: true,
    value: { operation: body.operation, items: body.items, callbackUrl: body.callbackUrl },
    operation,
  };
}

/** JSON with object keys sorted: the same request, whatever its key order, hashes the same. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object')
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(value ?? null);
}

export function importHash(request: ImportRequest): string {
  return createHash('sha256')
    .update(canonical([request.operation, request.items, request.callbackUrl ?? null]))
    .digest('hex');
}
