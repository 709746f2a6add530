import type { HttpRequest, HttpResponseInit } from '@azure/functions';
import type { DurableClient } from 'durable-functions';
import { acceptRequest } from '../webhooks/accept';
import { statusReply } from '../webhooks/reply';
import { IntegrationError, problem } from '../errors';
import { boundsProblems, MAX_DEPTH, MAX_ITEM_BYTES } from './body-bounds';
import type { ImportOperation } from './operations';
import { IMPORT, type ImportInput, type ImportState } from './orchestration';
import { checkImport, importHash, maxBodyBytes, parseImportShape, type ImportRequest } from './request';
import { importReply } from './reply';
import type { ImportParts } from './parts';
import { batchDigest } from './store';

/** The body's bounds, with the allow-list's variable counts where imports are on. */
function importBounds(maxItems: number, operations: Map<string, ImportOperation> | undefined) {
  const mostDeclared = Math.max(0, ...[...(operations?.values() ?? [])].map((o) => o.variables.length));
  return {
    maxItems,
    maxItemBytes: MAX_ITEM_BYTES,
    maxDepth: MAX_DEPTH,
    maxKeptNames: mostDeclared,
    declaredVariables: (name: string | undefined) => {
      if (name === undefined || !operations) return undefined;
      const operation = operations.get(name);
      if (!operation) return { count: mostDeclared };
      const names = new Set(operation.variables.map((v) => v.variable.name.value));
      return { count: names.size, names };
    },
  };
}

/**
 * POST /api/imports, accepted the one way every webhook is (shared/webhooks/accept.ts): the body's size and type; the
 * signature where IMPORTS_REQUEST_SECRET_NAME asks for one; the body's bounds on its text (items, an item's size,
 * nesting, variables) before anything parses it, then its shape. A key already used — the Idempotency-Key, and a
 * signed request's `webhook-id` — answers the import it named before anything else is looked at (the allow-list, the
 * tenant, the session may all have changed since). Then imports switched on (IMPORT_OPERATIONS_FILE outside
 * development) and the body whole — operation on the allow-list, unique keys, every item's variables (400/422). Only a
 * new import needs a signed-in admin (409). Then the items are stored and the import orchestration starts: 202.
 */
export function createImport(
  request: HttpRequest,
  client: DurableClient,
  setup: ImportParts,
): Promise<HttpResponseInit> {
  // The allow-list, or why imports are off: told once a key has had its chance to name an earlier import.
  let operations: Map<string, ImportOperation> | undefined;
  let disabled: string | undefined;
  let operation: ImportOperation | undefined;
  let loaded = false;
  const allowList = async () => {
    if (loaded) return;
    loaded = true;
    try {
      operations = await setup.operations();
    } catch (err) {
      if (!(err instanceof IntegrationError && err.code === 'imports_disabled')) throw err;
      disabled = err.message;
    }
  };
  return acceptRequest<ImportRequest, ImportInput, ImportState>(request, client, {
    reply: importReply(setup),
    orchestrator: IMPORT.orchestrator,
    maxBodyBytes: maxBodyBytes(setup.maxItems),
    secret: setup.requestSecret,
    keys: setup.keys,
    clock: setup.clock,
    logger: setup.logger,
    async closed() {
      await allowList();
      return disabled ? problem(403, 'imports_disabled', disabled) : undefined;
    },
    async parse(text) {
      await allowList();
      const tooBig = boundsProblems(text, importBounds(setup.maxItems, operations));
      if (tooBig.length)
        return {
          refused: problem(400, 'invalid_request', tooBig.join('; '), { members: { problems: tooBig } }),
        };
      const shape = parseImportShape(text, setup.maxItems);
      if (!shape.ok)
        return {
          refused: problem(400, 'invalid_request', shape.problems.join('; '), {
            members: { problems: shape.problems },
          }),
        };
      return { value: shape.value, bodyHash: importHash(shape.value) };
    },
    async check(body) {
      if (disabled || !operations) return problem(403, 'imports_disabled', disabled ?? 'imports are off');
      const parsed = checkImport(body, {
        operations,
        development: setup.development,
        schema: await setup.schema(),
      });
      if (!parsed.ok && parsed.code === 'operations_invalid')
        return problem(422, parsed.code, parsed.problems.join('; '));
      if (!parsed.ok)
        return problem(400, parsed.code, parsed.problems.join('; '), {
          members: {
            problems: parsed.problems,
            ...(parsed.code === 'unknown_operation' ? { knownOperations: [...operations.keys()] } : {}),
          },
        });
      operation = parsed.operation;
      return undefined;
    },
    async prepare(body, id, now) {
      const session = await setup.session();
      if (session?.state !== 'connected')
        // Nothing was started: the key is free again for the same request once an admin has signed in.
        return {
          refused: problem(
            409,
            'admin_login_required',
            `imports run with an admin's session and ${session ? `the last one needs a new sign-in (${session.reason ?? 'refresh refused'})` : 'no admin has signed in'}: sign in on the admin page (/api/manage) or with \`tenant-integrations login\`, then send the import again`,
            { members: { adminPage: '/api/manage' } },
          ),
        };
      const input: ImportInput = {
        id,
        tenant: setup.tenant,
        operation: body.operation,
        total: body.items.length,
        requestedAt: new Date(now).toISOString(),
        adminWaitMs: setup.adminWaitMs,
        // The admin it is accepted under: only that person's session applies it, now or after a wait.
        person: session.username,
        ...(body.callbackUrl ? { callbackUrl: body.callbackUrl } : {}),
      };
      const batch = {
        operation: body.operation,
        document: (operation as ImportOperation).document,
        items: body.items,
      };
      input.digest = batchDigest(batch);
      await setup.store.saveBatch(id, batch);
      return { input };
    },
    accepted: (input) => setup.accepted(input),
  });
}

/** GET /api/imports/{id}: state, counts and a result per item. */
export const importStatus = (request: HttpRequest, client: DurableClient, setup: ImportParts) =>
  statusReply(importReply(setup), request, client);
