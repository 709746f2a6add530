import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BUILT_IN_OPERATIONS } from '../../shared/imports/operations';
import type { RunSummary } from '../../shared/runs/summary';
import { LOGIN_RUN } from '../../shared/device-login/orchestration';
import { IMPORT_RUN } from '../../shared/imports/orchestration';
import { SYNC_RUN } from '../../shared/sync/orchestration';
import { runSpanContext } from '../../shared/telemetry';
import { startCollector, type Collector, type ReceivedSpan } from '../helpers/collector';
import { eventually } from '../helpers/host';
import { stackFixture, type Stack } from '../helpers/stack';

/**
 * Telemetry as an operator receives it: the app on the local host sends OpenTelemetry traces and logs to a real
 * OpenTelemetry Collector (OTLP/HTTP, the standard OTEL_EXPORTER_OTLP_ENDPOINT), and each run — a sync, an
 * export, a device login — arrives as one connected trace whose id comes from the run id, with the app's log
 * records joined to it. Nothing secret in any span or log record.
 */
jest.setTimeout(240_000);

let collector: Collector;
let stack: Stack;
beforeAll(async () => {
  collector = await startCollector();
  // Imports on, as an operator turns them on outside development: the sandbox's mutation named in a file.
  const operations = join(await mkdtemp(join(tmpdir(), 'ti-telemetry-')), 'operations.json');
  await writeFile(
    operations,
    JSON.stringify({ operations: { updateKpi: BUILT_IN_OPERATIONS.updateKpi.document } }),
  );
  stack = await stackFixture({
    sandbox: { records: 120 },
    env: {
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
      OTEL_SERVICE_NAME: 'ti-test',
      IMPORT_OPERATIONS_FILE: operations,
    },
  });
}, 600_000);
afterAll(async () => {
  await stack?.close();
  await collector?.close();
});

const runs = async (kind: string) =>
  ((await stack.json(`manage/runs?kind=${kind}`)).body as { runs: RunSummary[] }).runs;

/** Every span of a run's trace, once its own span (emitted when it ends) has arrived. */
const traceOf = (runId: string, rootName: string) =>
  eventually(
    async () => {
      const { traceId, spanId } = runSpanContext(runId);
      const spans = collector.received().spans.filter((s) => s.traceId === traceId);
      return spans.some((s) => s.spanId === spanId && s.name === rootName) && spans;
    },
    `the ${rootName} trace of ${runId}`,
    60_000,
  );

/** The trace is one tree: one root (the run's span), every other span's parent is in the trace. */
function expectConnected(spans: ReceivedSpan[], runId: string) {
  const ids = new Set(spans.map((s) => s.spanId));
  const roots = spans.filter((s) => !s.parentSpanId);
  expect(roots.map((s) => s.spanId)).toEqual([runSpanContext(runId).spanId]);
  expect(roots[0].attributes.runId).toBe(runId);
  const orphans = spans.filter((s) => s.parentSpanId && !ids.has(s.parentSpanId)).map((s) => s.name);
  expect(orphans).toEqual([]);
}

const parentOf = (spans: ReceivedSpan[], s: ReceivedSpan) => spans.find((p) => p.spanId === s.parentSpanId);

describe('OpenTelemetry traces and logs on a real collector', () => {
  let syncRun: RunSummary;

  it('a sync is one trace: run → activities → stream pages → GraphQL, token and sink calls', async () => {
    expect((await stack.json('manage/sync', { method: 'POST' })).status).toBe(202);
    syncRun = await eventually(
      async () => {
        const [latest] = await runs('sync');
        return latest && latest.outcome !== 'running' && latest;
      },
      'the sync to finish',
      120_000,
    );
    expect(syncRun.outcome).toBe('succeeded');
    const spans = await traceOf(syncRun.id, 'sync run');
    expectConnected(spans, syncRun.id);
    const names = new Set(spans.map((s) => s.name));
    for (const name of [
      'sync run',
      'sync begin',
      'sync stream',
      'sync page',
      'graphql',
      'token',
      'sink write',
      'sink end stream',
      'sync finish',
      'sink finish',
      'run history',
    ])
      expect([name, names.has(name)]).toEqual([name, true]);
    const root = spans.find((s) => !s.parentSpanId) as ReceivedSpan;
    expect(root.attributes).toMatchObject({ kind: 'sync', outcome: 'succeeded', trigger: 'manual' });
    expect(root.service).toBe('ti-test');
    // Activities hang off the run; each stream's pages and requests off its activity.
    const streams = spans.filter((s) => s.name === 'sync stream');
    expect(new Set(streams.map((s) => s.attributes.stream)).size).toBe(6);
    for (const s of streams) expect(parentOf(spans, s)?.name).toBe('sync run');
    const pages = spans.filter((s) => s.name === 'sync page');
    for (const p of pages) {
      expect(parentOf(spans, p)?.name).toBe('sync stream');
      expect(p.attributes).toMatchObject({
        runId: syncRun.id,
        page: expect.any(Number),
        records: expect.any(Number),
      });
    }
    const graphql = spans.filter((s) => s.name === 'graphql');
    expect(graphql.length).toBeGreaterThanOrEqual(pages.length);
    for (const g of graphql) {
      expect(g.kind).toBe(3); // client
      // Pages, plus the schema read that checks the catalog before the run (and the first run's probes and proofs).
      expect(g.attributes).toMatchObject({
        operation: expect.stringMatching(/^(Sync_|Probe_|Prove_|TenantSchema$)/),
        status: 200,
      });
    }
    expect(graphql.filter((g) => g.attributes.operation === 'TenantSchema')).toHaveLength(1);
    // The run's log records carry its trace: an operator goes from a record to the whole run.
    const completed = collector
      .received()
      .logs.find((l) => l.body === 'sync run completed' && l.attributes.runId === syncRun.id);
    expect(completed).toMatchObject({
      traceId: runSpanContext(syncRun.id).traceId,
      attributes: { tenant: stack.sb.tenant },
    });
  });

  it('an export is one trace, from the request that accepted it to its run span', async () => {
    const res = await stack.json(
      'exports',
      {
        method: 'POST',
        body: JSON.stringify({ streams: ['users', 'kpis'], format: 'csv' }),
        headers: { 'content-type': 'application/json' },
      },
      stack.keys.function,
    );
    expect(res.status).toBe(202);
    const id = res.body.id as string;
    const spans = await traceOf(id, 'export run');
    expectConnected(spans, id);
    const names = spans.map((s) => s.name);
    expect(names).toEqual(
      expect.arrayContaining(['export accepted', 'export stream', 'export finish', 'graphql']),
    );
    expect(
      spans
        .filter((s) => s.name === 'export stream')
        .map((s) => s.attributes.stream)
        .sort(),
    ).toEqual(['kpis', 'users']);
    expect(spans.find((s) => !s.parentSpanId)?.attributes).toMatchObject({
      kind: 'export',
      outcome: 'succeeded',
    });
  });

  it('a device login is one trace: code, polls, and its end with who signed in', async () => {
    await stack.sb.hook('reset');
    const started = await stack.json('manage/device-login?force=true', { method: 'POST' });
    expect(started.status).toBe(202);
    await stack.sb.hook('device/approve', { userCode: started.body.userCode, username: 'admin' });
    await stack.advance(5);
    const status = await eventually(async () => {
      const s = await stack.json(`manage/device-login/${started.body.id}`);
      return s.body.state === 'authorised' && s.body;
    }, 'the login to be authorised');
    const runId = status.runId as string;
    expect(runId).toMatch(/^login-/);
    const spans = await traceOf(runId, 'device login');
    expectConnected(spans, runId);
    expect(spans.map((s) => s.name)).toEqual(
      expect.arrayContaining(['device login code', 'device login poll', 'device login end']),
    );
    expect(spans.find((s) => !s.parentSpanId)?.attributes).toMatchObject({
      kind: 'login',
      outcome: 'succeeded',
      state: 'authorised',
    });
    // The login is in the run history too.
    expect((await runs('login'))[0]).toMatchObject({ id: runId, outcome: 'succeeded' });
  });

  it('a stream that fails returns its result, and its span is failed with its code: the documented query finds it', async () => {
    // The tenant refuses one stream’s query (HTTP 400 with GraphQL errors): the run goes on with the others, and fails.
    await stack.sb.hook('faults', { route: 'graphql', status: 400, match: 'Sync_kpis', count: 50 });
    expect((await stack.json('manage/sync', { method: 'POST' })).status).toBe(202);
    const failed = await eventually(
      async () => {
        const [latest] = await runs('sync');
        return latest && latest.id !== syncRun.id && latest.outcome !== 'running' && latest;
      },
      'the second sync to finish',
      120_000,
    );
    await stack.sb.hook('faults/clear');
    expect(failed.outcome).toBe('failed');
    const spans = await traceOf(failed.id, SYNC_RUN.span);
    // `dependencies | where name == "sync stream" and success == false | project …, stream, code` (docs/operations.md)
    const failedStreams = spans.filter((s) => s.name === 'sync stream' && s.status?.code === 2);
    expect(failedStreams.map((s) => [s.attributes.stream, s.attributes.code])).toEqual([
      ['kpis', 'graphql_errors'],
    ]);
    // The others succeeded, and each slice that read its pages left the heartbeat the no-successful-sync alert counts.
    const ok = spans.filter((s) => s.name === 'sync stream' && s.status?.code !== 2);
    expect(ok).toHaveLength(5);
    // Logs reach the collector's receiver on their own schedule, not with the spans: waited for, not assumed.
    const progressOf = () =>
      collector
        .received()
        .logs.filter((l) => l.body === 'sync run progress' && l.attributes.runId === failed.id);
    const streamsWithProgress = () => new Set(progressOf().map((l) => l.attributes.stream)).size;
    await eventually(
      async () => streamsWithProgress() >= 5,
      'a progress record from each stream that read',
      30_000,
    ).catch(() => undefined);
    expect(streamsWithProgress()).toBe(5);
    const progress = progressOf();
    for (const l of progress)
      expect(l.attributes).toMatchObject({ tenant: stack.sb.tenant, records: expect.any(Number) });
    expect(spans.find((s) => !s.parentSpanId)).toMatchObject({
      status: { code: 2 },
      attributes: { outcome: 'failed' },
    });
  });

  it('an import is one trace ending in its “import run” span, as the workbook’s runs chart reads it', async () => {
    const res = await stack.json(
      'imports',
      {
        method: 'POST',
        body: JSON.stringify({
          operation: 'updateKpi',
          items: [{ key: 'a', variables: { id: 'kpi-0000001', input: { value: 1.5 } } }],
        }),
        headers: { 'content-type': 'application/json' },
      },
      stack.keys.function,
    );
    expect(res.status === 202 ? '' : res.text).toBe('');
    const spans = await traceOf(res.body.id, IMPORT_RUN.span);
    expectConnected(spans, res.body.id);
    expect(spans.map((s) => s.name)).toEqual(
      expect.arrayContaining(['import accepted', 'import apply', 'import finish']),
    );
    expect(spans.find((s) => !s.parentSpanId)?.attributes).toMatchObject({
      kind: 'import',
      outcome: 'succeeded',
    });
  });

  it('a login stopped from outside is ended by the sweep under the same span name as any login, failed run_stopped', async () => {
    const login = await stack.json('manage/device-login?force=true', { method: 'POST' });
    expect(login.status).toBe(202);
    await fetch(
      `${stack.url}/runtime/webhooks/durabletask/instances/${login.body.id}/terminate?reason=operator&code=${stack.keys.system}`,
      { method: 'POST' },
    );
    await eventually(
      async () =>
        (
          await (
            await fetch(
              `${stack.url}/runtime/webhooks/durabletask/instances/${login.body.id}?code=${stack.keys.system}`,
            )
          ).json()
        ).runtimeStatus === 'Terminated',
      'the login to be terminated',
    );
    // The sweep (before a sync starts) leaves runs younger than a minute alone.
    await stack.advance(120);
    expect((await stack.json('manage/sync', { method: 'POST' })).status).toBe(202);
    const spans = await traceOf(login.body.runId, LOGIN_RUN.span);
    const root = spans.find((s) => !s.parentSpanId);
    expect(root).toMatchObject({
      name: 'device login',
      status: { code: 2 },
      attributes: { kind: 'login', outcome: 'failed', code: 'run_stopped' },
    });
  });

  it('no span or log record carries a secret, a token, a device code or a record value', async () => {
    const { text } = collector.received();
    const secrets = await stack.secrets();
    for (const value of Object.values(secrets)) expect(text).not.toContain(value);
    expect(text).not.toContain(stack.sb.clientSecret);
    // Tokens are JWTs (base64url JSON: "eyJ…"); device codes and refresh tokens never leave the secret store.
    expect(text).not.toMatch(/eyJ[\w-]{10,}\.[\w-]{10,}/);
    expect(text).not.toMatch(/device_code|refresh_token|client_secret/);
    // A record's field value (the sandbox's e-mail addresses) is never an attribute.
    expect(text).not.toMatch(/@example\.org/);
    // Every attribute is one of the allow-listed fields (shared/log/fields.ts), besides the resource's own.
    const { LOG_FIELDS } = await import('../../shared/log/fields');
    const allowed = new Set<string>(LOG_FIELDS);
    const { spans, logs } = collector.received();
    const keys = new Set([...spans, ...logs].flatMap((x) => Object.keys(x.attributes)));
    expect([...keys].filter((k) => !allowed.has(k))).toEqual([]);
  });
});
