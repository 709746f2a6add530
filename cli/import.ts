import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createAccessLayer } from '../shared/access';
import { introspect } from '../shared/catalog/introspect';
import { partOf } from '../shared/config';
import { IntegrationError } from '../shared/errors';
import { applyBatch, type Counts } from '../shared/imports/apply';
import { loadOperations } from '../shared/imports/operations';
import { IMPORT_SETTINGS } from '../shared/imports/settings';
import { parseImportRequest } from '../shared/imports/request';
import { itemResults } from '../shared/imports/reply';
import { MemoryImportStore } from '../shared/imports/store';
import { parse, UsageError } from './args';
import { describeTarget, resolveTenant } from './context';

const WIDTH = 24;
const MARKS = { applied: '✔', pending: '·', failed: '✘', outcome_unknown: '?', skipped: '–' } as const;

function bar(done: number, total: number, c: Counts): string {
  const ratio = total ? done / total : 1;
  return `[${'█'.repeat(Math.round(ratio * WIDTH)).padEnd(WIDTH, '░')}] ${done}/${total} · ${c.applied} applied · ${c.failed} failed${c.outcome_unknown ? ` · ${c.outcome_unknown} unknown` : ''}`;
}

/** `tenant-integrations import`: the import's own checks and ledger, in this process, with the stored session. */
export async function importCommand(args: string[]): Promise<number> {
  const { values } = parse(args, {
    operation: { type: 'string' },
    file: { type: 'string' },
    json: { type: 'boolean' },
  });
  if (!values.operation) throw new UsageError('--operation NAME is required');
  if (!values.file) throw new UsageError('--file PATH is required (one {"key", "variables"} per line)');
  let text: string;
  try {
    text = await readFile(values.file, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read ${values.file} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  const items: unknown[] = [];
  for (const [n, line] of text.split('\n').entries()) {
    if (!line.trim()) continue;
    try {
      items.push(JSON.parse(line));
    } catch {
      throw new UsageError(`${values.file}:${n + 1}: not a JSON line`);
    }
  }
  // A session signed in to an embedded sandbox ends with that command's sandbox: `login` cannot help there.
  const target = await resolveTenant(undefined, {
    refuseEmbedded: () =>
      new IntegrationError(
        'admin_login_required',
        "imports run with an admin's session, and no tenant is configured and no local stack is running (an embedded sandbox lasts one command, and its session with it): run `npm start`, then `tenant-integrations login` and this import in another terminal — or set TENANT_* for a real tenant",
      ),
  });
  try {
    const { config } = target;
    const access = createAccessLayer(config);
    if (!values.json) describeTarget(target);
    const session = await access.delegated.status();
    if (session?.state !== 'connected')
      throw new IntegrationError(
        'admin_login_required',
        `imports run with an admin's session and ${session ? 'the stored one needs a new sign-in' : 'none is stored'}: run \`tenant-integrations login\` first`,
      );
    // The sandbox's built-in operations where the tenant is the local sandbox, or in development.
    const operations = await loadOperations(partOf(config, IMPORT_SETTINGS).operationsFile, {
      builtIns: config.development || target.source !== 'configured',
    });
    const schema = await introspect(access.graphql).catch((err: unknown) => {
      if (err instanceof IntegrationError && err.code === 'introspection_refused') return undefined;
      throw err;
    });
    const parsed = parseImportRequest(JSON.stringify({ operation: values.operation, items }), {
      operations,
      maxItems: partOf(config, IMPORT_SETTINGS).maxItems,
      development: true,
      schema,
    });
    if (!parsed.ok && parsed.code === 'operations_invalid')
      throw new IntegrationError(parsed.code, parsed.problems.join('; '));
    if (!parsed.ok) throw new UsageError(parsed.problems.join('\n  '));
    const { operation } = parsed;
    const id = randomUUID();
    const store = new MemoryImportStore();
    const batch = { operation: operation.name, document: operation.document, items: parsed.value.items };
    await store.saveBatch(id, batch);
    const tty = !values.json && process.stderr.isTTY;
    const total = batch.items.length;
    const result = await applyBatch(id, batch, store, access.delegatedGraphql, {
      onProgress: (c) => {
        if (values.json || c.pending === total) return;
        const line = bar(total - c.pending, total, c);
        process.stderr.write(tty ? `\r\x1b[2K${line}` : `${line}\n`);
      },
    });
    if (tty) process.stderr.write('\n');
    const results = await itemResults(store, id, batch);
    if (values.json)
      process.stdout.write(
        `${JSON.stringify({
          operation: operation.name,
          counts: result.counts,
          results,
          ...(result.sessionLost ? { sessionLost: result.sessionLost } : {}),
          ...(result.tenantUnavailable ? { tenantUnavailable: result.tenantUnavailable } : {}),
        })}\n`,
      );
    else
      for (const r of results)
        process.stdout.write(`${MARKS[r.state]} ${r.key} ${r.state}${r.message ? `: ${r.message}` : ''}\n`);
    if (result.sessionLost) {
      process.stderr.write(
        `the admin session was lost (${result.sessionLost}): ${result.counts.pending} items not sent; run \`tenant-integrations login\`, then import those again\n`,
      );
      return 1;
    }
    if (result.tenantUnavailable) {
      process.stderr.write(
        `the tenant was unavailable (${result.tenantUnavailable}): ${result.counts.pending} items not sent; import those again later\n`,
      );
      return 1;
    }
    if (result.counts.outcome_unknown)
      process.stderr.write(
        `${result.counts.outcome_unknown} items were sent and their answer lost: they may or may not have been applied, and were not sent again; check them at the tenant (docs/import.md)\n`,
      );
    return result.counts.failed || result.counts.outcome_unknown ? 1 : 0;
  } finally {
    await target.close();
  }
}
