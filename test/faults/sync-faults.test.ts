import { TableClient } from '@azure/data-tables';
import { BlobServiceClient } from '@azure/storage-blob';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startAzurite, type RunningAzurite } from '../../cli/azurite';
import { resolveStreams } from '../../sandbox/streams';
import type { Change } from '../../shared/changes';
import { syncAll, type StreamResult } from '../../shared/sync/run-steps';
import {
  BlobSink,
  DirectorySink,
  MultiSink,
  PostgresSink,
  WebhookSink,
  type ChangeSink,
} from '../../shared/sinks';
import { BlobSyncStateStore } from '../../shared/sync/blob-state';
import { FileSyncStateStore } from '../../shared/sync/file-state';
import type { SyncStateStore } from '../../shared/sync/sync-state';
import { errorText } from '../../shared/errors';
import { createLogger } from '../../shared/log';
import { RUNS_TABLE, TableRunHistory } from '../../shared/runs/history';
import { syncSummary } from '../../shared/sync/summary';
import { createSecretStore, LocalFileSecretStore } from '../../shared/secrets';
import {
  documented,
  fakeCredential,
  keyVaultReplay,
  recorded,
  recordedGetOf,
  type Answer,
} from '../helpers/key-vault-replay';
import { accessFixture } from '../helpers/access';
import { CLI } from '../helpers/cli';
import { startPostgres } from '../helpers/postgres';
import { sandboxFixture, type SandboxFixture } from '../helpers/sandbox';
import { webhookReceiver } from '../helpers/webhook-receiver';
import { record } from './report';

/**
 * Faults injected into real servers during a real sync (the app's own sync code, in this process or as the
 * CLI), each ending with the same three checks: every record delivered, none twice, nothing secret logged.
 * A fault that fails the run is followed by a second run with the fault gone, which must resume it.
 */
jest.setTimeout(120_000);

const RECORDS = 250; // per stream: three pages of 100
const STREAMS = resolveStreams({ select: ['controls', 'kpis'] });
const TOKEN = /eyJ[\w-]{10,}\.[\w-]{10,}/;

let sb: SandboxFixture;
let receiver: Awaited<ReturnType<typeof webhookReceiver>>;
let dir: string;
beforeAll(async () => {
  sb = await sandboxFixture({ records: RECORDS });
  receiver = await webhookReceiver();
});
afterAll(async () => {
  await receiver?.close();
  await sb?.close();
});
beforeEach(async () => {
  await sb.hook('reset');
  dir = await mkdtemp(join(tmpdir(), 'ti-faults-'));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

type Access = Awaited<ReturnType<typeof accessFixture>>;
interface Run {
  ok: boolean;
  runId: string;
  resumed: boolean;
  streams: StreamResult[];
}
interface Ctx {
  access: Access;
  state: SyncStateStore;
  out: string;
  /** Once per run, at the first page of the first stream. */
  onFirstPage?: () => Promise<void>;
}

interface Case {
  area: string;
  fault: string;
  expected: string;
  /** Before the first run (e.g. queue sandbox faults). */
  inject?: (ctx: Ctx) => Promise<void>;
  /** During the first run, after its first delivered page. */
  during?: (ctx: Ctx) => Promise<void>;
  /** What the first run must end with: completed, or failed with this error code (then checked by `then`). */
  firstRun: 'completes' | { failsWith: string; saying?: RegExp; then?: (run: Run) => Promise<string> };
  /** Between the runs: the operator's fix, when one is needed. */
  fix?: (ctx: Ctx) => Promise<Ctx | void>;
  sink?: (ctx: Ctx) => ChangeSink;
  /** Where the delivered changes are read back from (default: the folder sink). */
  delivered?: (ctx: Ctx, runId: string) => Promise<Change[]>;
  access?: Parameters<typeof accessFixture>[1];
  state?: (ctx: Omit<Ctx, 'state'>) => SyncStateStore;
  /** Checks that the fault really happened mid-run; returns what it saw. */
  verify?: (ctx: Ctx) => Promise<string>;
}

async function folderChanges(out: string, runId: string): Promise<Change[]> {
  const all: Change[] = [];
  for (const s of STREAMS) {
    const text = await readFile(join(out, runId, `${s.name}.ndjson`), 'utf8').catch(() => '');
    for (const line of text.split('\n').filter(Boolean)) all.push(JSON.parse(line) as Change);
  }
  return all;
}

const webhookChanges = (runId: string): Change[] =>
  receiver
    .unique()
    .filter((m) => m.type === 'sync.changes' && m.data.runId === runId)
    .flatMap((m) => m.data.changes as Change[]);

/** The CLI's environment: the sandbox's settings and its secret in a local secrets file under `dir`. */
async function cliEnv(): Promise<NodeJS.ProcessEnv> {
  const secretsFile = join(dir, 'secrets.json');
  await new LocalFileSecretStore(secretsFile).set('tenant-client-secret', sb.clientSecret);
  return { ...process.env, ...sb.settings, LOCAL_SECRETS_FILE: secretsFile };
}

/** Runs the CLI to its end: exit code and standard output. */
const cliRun = (args: string[], env: NodeJS.ProcessEnv) =>
  new Promise<{ code: number | null; out: string }>((done) => {
    const c = spawn(process.execPath, args, { env, cwd: dir });
    let text = '';
    c.stdout.on('data', (d) => (text += d));
    c.on('close', (code) => done({ code, out: text }));
  });

/** Pages the sandbox has served to syncs (the schema read and the probes of a first run are not pages). */
const syncPages = async () =>
  Object.entries((await sb.hook('stats')).body.graphql.byOperation as Record<string, number>)
    .filter(([name]) => name.startsWith('Sync_'))
    .reduce((n, [, count]) => n + count, 0);

/**
 * Starts the CLI and kills it (SIGKILL) once it has read `pages` more pages; returns when it is gone. Every
 * GraphQL answer is held 400 ms meanwhile, so the run is still going when it is killed (with only the first few
 * held, a loaded machine once let the rest finish the run between two looks), and answers at once again after.
 */
async function killAfterPages(args: string[], env: NodeJS.ProcessEnv, pages: number): Promise<void> {
  await sb.hook('faults', { route: 'graphql', delayMs: 400, count: 50 });
  try {
    const before = await syncPages();
    const child = spawn(process.execPath, args, { env, cwd: dir, stdio: 'ignore' });
    const exited = new Promise((r) => child.once('exit', r));
    for (let i = 0; i < 600 && (await syncPages()) < before + pages; i++)
      await new Promise((r) => setTimeout(r, 25));
    child.kill('SIGKILL');
    await exited;
  } finally {
    await sb.hook('faults/clear');
  }
}

async function runOnce(ctx: Ctx, sink: ChangeSink): Promise<Run> {
  let fired = false;
  return syncAll(ctx.access.graphql, STREAMS, {
    tenant: sb.tenant,
    state: ctx.state,
    sink,
    clock: ctx.access.clock,
    logger: createLogger((line) => ctx.access.logs.push(line)),
    concurrency: 2,
    onPage: () => {
      if (fired || !ctx.onFirstPage) return;
      fired = true;
      void ctx.onFirstPage();
    },
  });
}

const failureOf = (run: Run) => {
  const failed = run.streams.find((s) => !s.ok);
  return failed ? `${failed.errorCode}: ${failed.error?.slice(0, 140)}` : 'none';
};

/** Runs a case end to end and records its row; the row says what was observed even when a check fails. */
async function check(c: Case): Promise<void> {
  const out = join(dir, 'out');
  const access = await accessFixture(sb, c.access);
  const base = { access, out } as Omit<Ctx, 'state'>;
  let ctx: Ctx = { ...base, state: c.state?.(base) ?? new FileSyncStateStore(join(dir, 'state')) };
  const observed: string[] = [];
  let ok = false;
  try {
    await c.inject?.(ctx);
    if (c.during) {
      let once = false;
      ctx.onFirstPage = async () => {
        if (once) return;
        once = true;
        await c.during?.(ctx);
      };
    }
    const sink = () => c.sink?.(ctx) ?? new DirectorySink(out);
    const first = await runOnce(ctx, sink());
    observed.push(first.ok ? 'run 1 completed' : `run 1 incomplete (${failureOf(first)})`);
    if (c.firstRun === 'completes')
      expect({ ok: first.ok, failure: failureOf(first) }).toEqual({ ok: true, failure: 'none' });
    else {
      expect(first.ok).toBe(false);
      expect(first.streams.map((s) => s.errorCode)).toContain(c.firstRun.failsWith);
      if (c.firstRun.saying)
        expect(first.streams.map((s) => s.error ?? '').join('\n')).toMatch(c.firstRun.saying);
      if (c.firstRun.then) observed.push(await c.firstRun.then(first));
    }
    let last = first;
    if (!first.ok) {
      ctx = (await c.fix?.(ctx)) ?? ctx;
      ctx.onFirstPage = undefined;
      last = await runOnce(ctx, sink());
      observed.push(
        last.ok
          ? `run 2 ${last.resumed ? 'resumed it and' : ''} completed`
          : `run 2 incomplete (${failureOf(last)})`,
      );
      expect(last.ok).toBe(true);
      expect(last.runId).toBe(first.runId); // resumed under its own id: nothing delivered under a new identity
    }
    const changes = await (c.delivered ?? ((x: Ctx, id: string) => folderChanges(x.out, id)))(
      ctx,
      last.runId,
    );
    const ids = new Set(changes.map((ch) => ch.changeId));
    observed.push(
      `${ids.size} of ${RECORDS * STREAMS.length} records delivered, ${changes.length - ids.size} twice`,
    );
    expect(changes).toHaveLength(RECORDS * STREAMS.length);
    expect(ids.size).toBe(RECORDS * STREAMS.length);
    for (const s of STREAMS)
      expect(new Set(changes.filter((ch) => ch.stream === s.name).map((ch) => ch.id)).size).toBe(RECORDS);
    if (c.verify) observed.push(await c.verify(ctx));
    const logged = JSON.stringify(access.logs);
    const leaked = logged.includes(sb.clientSecret) || TOKEN.test(logged);
    observed.push(leaked ? 'a secret was logged' : 'no secret logged');
    expect(leaked).toBe(false);
    ok = true;
  } catch (err) {
    if (!observed.length) observed.push(`error: ${(err as Error).message.split('\n')[0]}`);
    throw err;
  } finally {
    record({
      kind: 'fault',
      area: c.area,
      fault: c.fault,
      expected: c.expected,
      observed: observed.join('; '),
      ok,
    });
    await access.cleanup();
  }
}

const faults = (spec: Record<string, unknown>) => () => sb.hook('faults', spec).then(() => undefined);
/** Slow pages after the first, so what `during` does lands while the run still has pages to read. */
const slowPages = faults({ route: 'graphql', delayMs: 300, count: 5 });
const stats = async () =>
  (await sb.hook('stats')).body as { token: { client_credentials: number }; graphql: { refused: number } };
/** The run asked for a token again mid-run (the first one was no longer accepted). */
const renewed = async () => {
  const s = await stats();
  expect(s.token.client_credentials).toBeGreaterThanOrEqual(2);
  return `${s.token.client_credentials} token requests, ${s.graphql.refused} GraphQL requests refused`;
};
const retried = 'retried with backoff; the run completes';
const resumes = (what: string) => `run 1 stops (${what}); run 2 resumes it`;

describe('identity provider', () => {
  it.each<[string, Record<string, unknown>]>([
    ['HTTP 500 twice', { route: 'token', status: 500, count: 2 }],
    ['HTTP 503 with Retry-After', { route: 'token', status: 503, retryAfterSeconds: 1, count: 1 }],
    ['HTTP 429 with Retry-After', { route: 'token', status: 429, retryAfterSeconds: 1, count: 1 }],
    ['connection reset twice', { route: 'token', reset: true, count: 2 }],
    ['slow answer (0.8 s)', { route: 'token', delayMs: 800, count: 1 }],
    ['no answer within the timeout', { route: 'token', delayMs: 2500, count: 1 }],
  ])('%s', (fault, spec) =>
    check({
      area: 'identity provider',
      fault,
      expected: retried,
      inject: faults(spec),
      firstRun: 'completes',
      access: {
        tokenOptions: { timeoutMs: 1_500, retry: { maxAttempts: 4, baseDelayMs: 5, maxDelayMs: 50 } },
      },
    }),
  );

  it('HTTP 503 for longer than the retries last', () =>
    check({
      area: 'identity provider',
      fault: 'HTTP 503 on every try of a run',
      expected: resumes('UPSTREAM_UNAVAILABLE after capped retries'),
      inject: faults({ route: 'token', status: 503, retryAfterSeconds: 0, count: 8 }),
      firstRun: { failsWith: 'upstream_unavailable' },
      access: { tokenOptions: { retry: { maxAttempts: 3, baseDelayMs: 5, maxDelayMs: 20 } } },
      fix: async () => {
        await sb.hook('reset'); // the outage is over
      },
    }));

  it('malformed JSON', () =>
    check({
      area: 'identity provider',
      fault: '200 with a body that is not JSON',
      expected: resumes('UPSTREAM_MALFORMED naming the token endpoint'),
      inject: faults({ route: 'token', malformed: true, count: 1 }),
      firstRun: { failsWith: 'upstream_malformed' },
    }));

  it('redirect', async () => {
    const elsewhere = await webhookReceiver();
    try {
      await check({
        area: 'identity provider',
        fault: '307 redirect to another server',
        expected: resumes(
          'UPSTREAM_REJECTED naming TENANT_AUTH_URL; the secret never reaches the other server',
        ),
        inject: faults({ route: 'token', redirect: elsewhere.url, count: 1 }),
        firstRun: { failsWith: 'upstream_rejected', saying: /TENANT_AUTH_URL/ },
        fix: async () => {
          expect(elsewhere.received.length + elsewhere.rejected.length).toBe(0);
        },
      });
    } finally {
      await elsewhere.close();
    }
  });
});

describe('GraphQL', () => {
  it.each<[string, Record<string, unknown>]>([
    ['HTTP 429 with Retry-After twice', { route: 'graphql', status: 429, retryAfterSeconds: 1, count: 2 }],
    ['HTTP 500 twice', { route: 'graphql', status: 500, count: 2 }],
    ['HTTP 503 three times', { route: 'graphql', status: 503, count: 3 }],
    ['connection reset twice', { route: 'graphql', reset: true, count: 2 }],
    ['connection reset mid-body twice', { route: 'graphql', cut: true, count: 2 }],
    ['slow answers (1 s)', { route: 'graphql', delayMs: 1000, count: 2 }],
    ['no answer within the timeout', { route: 'graphql', delayMs: 3000, count: 1 }],
    ['HTTP 401 (token no longer valid)', { route: 'graphql', status: 401, count: 1 }],
  ])('%s', (fault, spec) =>
    check({ area: 'GraphQL', fault, expected: retried, inject: faults(spec), firstRun: 'completes' }),
  );

  it.each<[string, Record<string, unknown>, string]>([
    ['`errors` beside partial data', { route: 'graphql', partial: true, count: 1 }, 'graphql_errors'],
    [
      '200 with a body that is not JSON',
      { route: 'graphql', malformed: true, count: 1 },
      'upstream_malformed',
    ],
    [
      'HTTP 400 with `errors` (the query is refused)',
      { route: 'graphql', status: 400, count: 1 },
      'graphql_errors',
    ],
  ])('%s', (fault, spec, code) =>
    check({
      area: 'GraphQL',
      fault,
      expected: resumes(`${code}; the page is not delivered as complete`),
      inject: faults(spec),
      firstRun: { failsWith: code },
    }),
  );

  it('an error that repeats a 20 000-character text', async () => {
    const azurite = await startAzurite({ location: join(dir, 'azurite') });
    const history = new TableRunHistory(
      TableClient.fromConnectionString(azurite.connectionString, RUNS_TABLE, {
        allowInsecureConnection: true,
      }),
    );
    const text = `Cannot query field "${'x'.repeat(20_000)}" on type "Control".`;
    try {
      await check({
        area: 'GraphQL',
        fault: 'HTTP 400 whose error repeats a 20 000-character text',
        expected: resumes(
          'schema_drift (the text names a field the schema lacks), bounded; in the run history as failed with the action',
        ),
        inject: faults({ route: 'graphql', status: 400, count: 1, message: text }),
        firstRun: {
          failsWith: 'schema_drift',
          then: async (run) => {
            const startedAt = new Date().toISOString();
            await history.record(
              syncSummary({ runId: run.runId, startedAt }, run.streams, {
                trigger: 'schedule',
                finishedAt: startedAt,
              }),
            );
            const kept = await history.get(run.runId);
            expect(kept).toMatchObject({
              outcome: 'failed',
              error: { code: 'schema_drift', action: errorText('schema_drift').action },
            });
            const longest = Math.max(
              kept?.error?.message.length ?? 0,
              ...Object.values(kept?.streams ?? {}).map((c) => c.error?.length ?? 0),
            );
            expect(longest).toBeLessThanOrEqual(2_000);
            return `in the run history as failed, its longest text ${longest} characters`;
          },
        },
      });
    } finally {
      await azurite.stop();
    }
  });

  it('an answer over the size cap', () =>
    check({
      area: 'GraphQL',
      fault: 'answer larger than the cap (2 KiB here, 64 MiB by default)',
      expected: resumes('UPSTREAM_MALFORMED naming the size; memory stays bounded'),
      firstRun: { failsWith: 'upstream_malformed', saying: /more than 2048 bytes/ },
      access: {
        graphqlOptions: { maxAnswerBytes: 2048, retry: { maxAttempts: 2, baseDelayMs: 5, maxDelayMs: 20 } },
      },
      fix: async (ctx) => ({ ...ctx, access: await accessFixture(sb) }),
    }));
});

describe('Key Vault (its recorded answers, replayed)', () => {
  let vault: Awaited<ReturnType<typeof keyVaultReplay>>;
  beforeAll(async () => {
    vault = await keyVaultReplay();
  });
  afterAll(() => vault?.close());
  afterEach(() => {
    vault.mismatches.splice(0);
    vault.served.splice(0);
  });

  /** The access layer reading its client secret from the replayed vault, as in Azure. */
  const viaVault = () => ({
    secrets: createSecretStore(
      { keyVaultUrl: vault.url, localSecretsFile: join(dir, 'unused.json') },
      { credential: fakeCredential().credential, keyVaultAgent: vault.agent },
    ),
  });
  const secret = () => recordedGetOf('tenant-client-secret', sb.clientSecret);
  const answering = (a: Answer) => ({ ...secret(), response: a });
  const nothingUnexpected = async () => {
    expect(vault.mismatches).toEqual([]);
    expect(vault.pending()).toBe(0);
    // A lasting refusal is served once per stream that asked before the run failed: reported once.
    const statuses = vault.served.filter((s) => !s.startsWith('challenge')).map((s) => s.split('→ ')[1]);
    return `Key Vault served: ${statuses.filter((s, i) => s !== statuses[i - 1]).join(', ')}`;
  };

  it.each<[string, () => Answer]>([
    ['HTTP 503 once', () => documented.unavailable],
    ['HTTP 429 with Retry-After once', () => documented.throttled],
  ])('%s', (fault, answer) =>
    check({
      area: 'Key Vault',
      fault,
      expected: 'retried by the Key Vault client; the run completes',
      inject: async () => vault.expect(answering(answer()), secret()),
      firstRun: 'completes',
      access: viaVault(),
      verify: nothingUnexpected,
    }),
  );

  it.each<[string, () => Answer, RegExp]>([
    [
      "the app's identity has no role on the vault (403 ForbiddenByRbac)",
      () => documented.forbiddenByRbac,
      /Key Vault Secrets User/,
    ],
    [
      'the secret is disabled (403 SecretDisabled, as recorded)',
      () => recorded.exchanges.disabled.response,
      /set-attributes --enabled true/,
    ],
  ])('%s', (fault, answer, saying) =>
    check({
      area: 'Key Vault',
      fault,
      expected: resumes('SECRET_STORE_UNAVAILABLE naming the fix; once fixed'),
      // The refusal lasts until fixed: each stream that asks for the secret before the run fails is refused.
      inject: async () => vault.always(answering(answer())),
      firstRun: { failsWith: 'secret_store_unavailable', saying },
      fix: async () => vault.expect(secret()),
      access: viaVault(),
      verify: nothingUnexpected,
    }),
  );
});

describe('sinks', () => {
  const webhook = (ctx: Ctx) =>
    new MultiSink([
      new DirectorySink(ctx.out),
      new WebhookSink(receiver.url, {
        secret: async () => receiver.secret,
        retry: { maxAttempts: 4, baseDelayMs: 5, maxDelayMs: 50 },
        timeoutMs: 2_000,
      }),
    ]);
  /** What the receiver got, once per webhook-id: each change must be there exactly once. */
  const viaWebhook = async (_ctx: Ctx, runId: string) => webhookChanges(runId);

  it('webhook receiver answers 500 twice', () =>
    check({
      area: 'sink: webhook',
      fault: 'HTTP 500 twice',
      expected: retried,
      inject: async () => receiver.failNext(2, 500),
      firstRun: 'completes',
      sink: webhook,
      delivered: viaWebhook,
    }));

  it('webhook receiver answers 410 Gone', () =>
    check({
      area: 'sink: webhook',
      fault: 'HTTP 410 (refuses for good)',
      expected: resumes('UPSTREAM_REJECTED at once, no retries; the receiver gets each change once'),
      inject: async () => receiver.failNext(1, 410),
      firstRun: { failsWith: 'upstream_rejected' },
      sink: webhook,
      delivered: viaWebhook,
    }));

  it('webhook receiver is slow', () =>
    check({
      area: 'sink: webhook',
      fault: 'answers after 1 s',
      expected: 'waited for; the run completes',
      inject: async () => receiver.slowNext(2, 1000),
      firstRun: 'completes',
      sink: webhook,
      delivered: viaWebhook,
    }));

  it('a record PostgreSQL cannot store (a lone surrogate in a field)', async () => {
    const pg = await startPostgres();
    let policy: 'fail' | 'quarantine' = 'fail';
    try {
      await check({
        area: 'sink: PostgreSQL',
        fault: 'one source record holds a lone UTF-16 surrogate (`\\ud800`)',
        expected: resumes(
          'sink_rejected naming the record and SYNC_REJECTED_RECORDS; with quarantine the record is set aside with its reason, the rest stored',
        ),
        inject: async () => {
          await sb.hook('data/set', {
            collection: 'kpis',
            id: 'kpi-0000042',
            fields: { name: 'Broken \ud800 KPI' },
          });
        },
        sink: () => new PostgresSink(() => pg.pool, { schema: 'faults_poison', rejected: policy }),
        firstRun: {
          failsWith: 'sink_rejected',
          saying: /record "kpi-0000042": a field holds a lone UTF-16 surrogate/,
        },
        fix: async () => {
          policy = 'quarantine';
        },
        // Stored or set aside, each record once: the streams' rows and the quarantine's.
        delivered: async () => {
          const rows = await pg.query<{ stream: string; id: string }>(
            `SELECT 'controls' AS stream, id FROM faults_poison.controls UNION ALL
             SELECT 'kpis', id FROM faults_poison.kpis UNION ALL
             SELECT stream, record_id::json #>> '{}' FROM faults_poison._quarantine`,
          );
          return rows.map((r) => ({
            changeId: `${r.stream}/${r.id}`,
            stream: r.stream,
            kind: 'created',
            id: r.id,
          }));
        },
        verify: async () => {
          const aside = await pg.query<{ record_id: string; reason: string }>(
            'SELECT record_id, reason FROM faults_poison._quarantine',
          );
          expect(aside).toEqual([{ record_id: '"kpi-0000042"', reason: expect.stringMatching(/surrogate/) }]);
          return `set aside: ${aside.length} (${aside[0].reason})`;
        },
      });
    } finally {
      await pg.stop();
    }
  });

  it('the source fails while the PostgreSQL sink holds pages to store together', async () => {
    const pg = await startPostgres();
    try {
      await check({
        area: 'sink: PostgreSQL',
        fault: 'the source answers with `errors` mid-pass while pages wait to be stored as a group',
        expected: resumes(
          'held pages are not checkpointed: run 2 reads them again and stores them; each change applied once',
        ),
        // Groups of 150 records: page 1 waits for page 2, page 3 for the flush.
        sink: () => new PostgresSink(() => pg.pool, { schema: 'faults_held', batchRows: 150 }),
        during: faults({ route: 'graphql', partial: true, count: 1 }),
        firstRun: { failsWith: 'graphql_errors' },
        delivered: async () =>
          (
            await pg.query<{ stream: string; id: string }>(
              `SELECT 'controls' AS stream, id FROM faults_held.controls UNION ALL SELECT 'kpis', id FROM faults_held.kpis`,
            )
          ).map((r) => ({ changeId: `${r.stream}/${r.id}`, stream: r.stream, kind: 'created', id: r.id })),
        verify: async () => {
          // Every page's checkpoint row once, their changes adding up to the records: nothing applied twice.
          const pages = await pg.query<{ stream: string; changes: number; pages: number }>(
            'SELECT stream, sum(changes)::int AS changes, count(*)::int AS pages FROM faults_held._sync_pages GROUP BY stream ORDER BY stream',
          );
          expect(pages).toEqual([
            { stream: 'controls', changes: RECORDS, pages: 3 },
            { stream: 'kpis', changes: RECORDS, pages: 3 },
          ]);
          return `checkpoint rows: ${pages.map((p) => `${p.stream} ${p.pages} pages, ${p.changes} changes`).join('; ')}`;
        },
      });
    } finally {
      await pg.stop();
    }
  });

  it('the folder cannot be written', () =>
    check({
      area: 'sink: folder',
      fault: 'a file stands where the folder should be',
      expected: resumes('the error names the path; once it is moved away, run 2 resumes'),
      inject: async (ctx) => writeFile(ctx.out, 'not a folder'),
      firstRun: { failsWith: 'unexpected', saying: /not a directory.*out/ },
      fix: async (ctx) => rm(ctx.out, { force: true }),
    }));
});

describe('credentials and clocks', () => {
  it('the secret is rotated mid-run', () =>
    check({
      area: 'credential',
      fault: 'rotated mid-run (new secret stored), tokens expire',
      expected: 'the token is renewed with the secret now in the store; the run completes',
      inject: slowPages,
      verify: renewed,
      during: async (ctx) => {
        const rotated = (await sb.hook(`credentials/${sb.clientId}/rotate`)).body.clientSecret as string;
        await ctx.access.storeSecret(rotated);
        await ctx.access.advance(301);
      },
      firstRun: 'completes',
      fix: async () => undefined,
    }).finally(() => sb.hook('reset')));

  it('the client secret is missing from the store', () =>
    check({
      area: 'credential',
      fault: 'the client secret is not in the secret store',
      expected: resumes('SECRET_NOT_FOUND saying how to set it; after `secrets set`'),
      inject: async (ctx) => ctx.access.file.delete(ctx.access.config.clientSecretName),
      firstRun: { failsWith: 'secret_not_found', saying: /secrets set tenant-client-secret/ },
      fix: async (ctx) => {
        await ctx.access.storeSecret(sb.clientSecret);
        return ctx;
      },
    }));

  it('the credential is revoked mid-run', () =>
    check({
      area: 'credential',
      fault: 'revoked mid-run, tokens expire',
      expected: resumes('credential_rejected naming the API Credentials page; with a new credential'),
      inject: slowPages,
      during: async (ctx) => {
        await sb.hook(`credentials/${sb.clientId}/revoke`);
        await ctx.access.advance(301);
      },
      firstRun: { failsWith: 'credential_rejected', saying: /API Credentials/ },
      fix: async (ctx) => {
        const made = (await sb.hook('credentials', { label: 'after revoke' })).body;
        const fresh = await accessFixture({
          ...sb,
          clientSecret: made.clientSecret,
          settings: { ...sb.settings, TENANT_CLIENT_ID: made.clientId },
        });
        return { ...ctx, access: fresh };
      },
    }).finally(() => sb.hook('reset')));

  it('both clocks jump an hour ahead mid-run', () =>
    check({
      area: 'clock',
      fault: 'jumps 1 h ahead mid-run (every token expired)',
      expected: 'a new token; the run completes',
      inject: slowPages,
      verify: renewed,
      during: (ctx) => ctx.access.advance(3600),
      firstRun: 'completes',
    }));

  it("the identity provider's clock runs 10 minutes ahead of ours", () =>
    check({
      area: 'clock',
      fault: "the IdP's clock 10 min ahead of the app's",
      expected: 'its 401 invalidates our token, one retry with a new one; the run completes',
      inject: slowPages,
      verify: async () => {
        expect((await stats()).graphql.refused).toBeGreaterThanOrEqual(1);
        return renewed();
      },
      during: async () => {
        await sb.advance(600);
      },
      firstRun: 'completes',
    }));
});

describe('processes and storage', () => {
  it('the process is killed mid-run (SIGKILL) and run again', async () => {
    const env = await cliEnv();
    const out = join(dir, 'out');
    const args = [CLI, 'sync', '--streams', 'controls,kpis', '--sink', `dir:${out}`, '--json'];
    const observed: string[] = [];
    let ok = false;
    try {
      await killAfterPages(args, env, 3);
      observed.push('killed after 3 pages');
      const again = await cliRun(args, env);
      expect(again.code).toBe(0);
      const summary = JSON.parse(again.out) as { runId: string; resumed: boolean };
      observed.push(`run 2 ${summary.resumed ? 'resumed it and ' : ''}completed`);
      expect(summary.resumed).toBe(true);
      const changes = await folderChanges(out, summary.runId);
      const ids = new Set(changes.map((c) => c.changeId));
      observed.push(`${ids.size} of ${RECORDS * 2} records delivered, ${changes.length - ids.size} twice`);
      expect(changes).toHaveLength(RECORDS * 2);
      expect(ids.size).toBe(RECORDS * 2);
      ok = true;
    } finally {
      record({
        kind: 'fault',
        area: 'process',
        fault: 'the sync process killed (SIGKILL) mid-run',
        expected:
          'the next run resumes from the checkpoint; the page in flight is written again under the same page',
        observed: observed.join('; '),
        ok,
      });
    }
  });

  it('an incremental pass killed mid-pass (SIGKILL) and run again', async () => {
    const env = await cliEnv();
    const out = join(dir, 'out');
    const args = [CLI, 'sync', '--streams', 'controls', '--sink', `dir:${out}`, '--json'];
    const observed: string[] = [];
    let ok = false;
    try {
      expect((await cliRun(args, env)).code).toBe(0); // the first, full pass
      // Three pages of changes for the incremental pass to read.
      const mutated = (
        await sb.hook('data/mutate', { collection: 'controls', creates: 10, updates: 220, deletes: 0 })
      ).body as { created: string[]; updated: string[] };
      await killAfterPages(args, env, 2);
      observed.push('killed after 2 pages of an incremental pass');
      const again = await cliRun(args, env);
      expect(again.code).toBe(0);
      const summary = JSON.parse(again.out) as {
        runId: string;
        resumed: boolean;
        streams: { controls: { pass: string } };
      };
      observed.push(
        `run 2 ${summary.resumed ? 'resumed it' : 'started over'}, ${summary.streams.controls.pass} pass`,
      );
      expect(summary).toMatchObject({ resumed: true, streams: { controls: { pass: 'incremental' } } });
      const changes = await folderChanges(out, summary.runId);
      const ids = new Set(changes.map((c) => c.changeId));
      observed.push(
        `${ids.size} of ${mutated.created.length + mutated.updated.length} changes delivered, ${changes.length - ids.size} twice`,
      );
      expect(
        changes
          .filter((c) => c.kind === 'created')
          .map((c) => c.id)
          .sort(),
      ).toEqual([...mutated.created].sort());
      expect(
        changes
          .filter((c) => c.kind === 'updated')
          .map((c) => c.id)
          .sort(),
      ).toEqual([...mutated.updated].sort());
      expect(ids.size).toBe(changes.length);
      ok = true;
    } finally {
      record({
        kind: 'fault',
        area: 'process',
        fault: 'the sync process killed (SIGKILL) during an incremental pass',
        expected: 'the next run resumes it as an incremental pass; each created or updated record once',
        observed: observed.join('; '),
        ok,
      });
    }
  });

  it('storage (Azurite) stops mid-run and comes back', async () => {
    const location = join(dir, 'azurite');
    let azurite: RunningAzurite = await startAzurite({ location });
    const service = (a: RunningAzurite) =>
      BlobServiceClient.fromConnectionString(a.connectionString, {
        retryOptions: { maxTries: 6, retryDelayInMs: 300, maxRetryDelayInMs: 2_000 },
      });
    const blob = service(azurite);
    let queriesAtStop = -1;
    try {
      await check({
        area: 'storage',
        fault: 'Azurite (state and blob sink) stopped for 1.5 s mid-run, then restarted',
        expected:
          'storage calls are retried over the outage (or the run stops and run 2 resumes); every record once',
        state: () => new BlobSyncStateStore(blob),
        sink: () => new BlobSink(blob),
        inject: slowPages,
        verify: async () => {
          // The outage began with pages still to read (6 in all), so it hit the run, not the time after it.
          expect(queriesAtStop).toBeGreaterThanOrEqual(0);
          expect(queriesAtStop).toBeLessThan(6);
          return `storage stopped after ${queriesAtStop} of 6 pages were asked for`;
        },
        during: async () => {
          queriesAtStop = (await sb.hook('stats')).body.graphql.queries as number;
          const ports = { blob: azurite.blobPort, queue: azurite.queuePort, table: azurite.tablePort };
          await azurite.stop();
          await new Promise((r) => setTimeout(r, 1_500));
          azurite = await startAzurite({ location, ports });
        },
        firstRun: 'completes',
        delivered: async (_ctx, runId) => {
          const container = blob.getContainerClient('sync-changes');
          const all: Change[] = [];
          for (const s of STREAMS) {
            const buf = await container
              .getBlobClient(`${sb.tenant}/${runId}/${s.name}.ndjson.gz`)
              .downloadToBuffer();
            const text = (await import('node:zlib')).gunzipSync(buf).toString('utf8');
            for (const line of text.split('\n').filter(Boolean)) all.push(JSON.parse(line) as Change);
          }
          return all;
        },
      });
    } finally {
      await azurite.stop();
    }
  });
});
