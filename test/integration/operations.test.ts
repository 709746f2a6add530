// Read through the API, which shows each kind's details: typed as the sync's (the kind these tests read most).
import type { SyncRunSummary as RunSummary } from '../../shared/sync/run-details';
import { ALERT_RECORDS } from '../../shared/log/alerts';
import { errorText } from '../../shared/errors';
import { eventually } from '../helpers/host';
import { stackFixture, type Stack } from '../helpers/stack';

/**
 * Operating the app unattended, on the local host over real storage (Azurite) and the sandbox: syncs started
 * through POST /api/manage/sync leave summaries in the run history, a sandbox fault makes one fail with the
 * action that fixes it, the status page shows them, and doctor finds a revoked credential. Only the Functions
 * host is stood in for (devhost/).
 */
jest.setTimeout(150_000);

let stack: Stack;
beforeAll(async () => {
  stack = await stackFixture({ sandbox: { records: 60 } });
});
afterAll(() => stack?.close());

const runs = async (query = '') =>
  (await stack.json(`manage/runs${query}`)).body as { runs: RunSummary[]; next?: string };
const latestFinished = (after: number) =>
  eventually(
    async () => {
      const { runs: list } = await runs('?kind=sync');
      return list.length > after && list[0].outcome !== 'running' && list;
    },
    'the sync run to finish',
    90_000,
  );
const startSync = () => stack.json('manage/sync', { method: 'POST' });

describe('run history, POST /api/manage/sync and the status page', () => {
  let first: RunSummary;
  let failed: RunSummary;

  it('a sync started by hand is recorded with its trigger, outcome and per-stream counts', async () => {
    const res = await startSync();
    expect(res.status).toBe(202);
    expect(res.text).not.toMatch(/runtime\/webhooks|system-key|master-key/);
    const list = await latestFinished(0);
    first = list[0];
    expect(first).toMatchObject({ kind: 'sync', trigger: 'manual', outcome: 'succeeded' });
    expect(Object.keys(first.streams).sort()).toEqual([
      'controls',
      'evidence',
      'kpis',
      'personnel',
      'reports',
      'users',
    ]);
    expect(first.streams.controls).toMatchObject({ read: 60, created: 60, ok: true });
    expect(first.streams.controls.durationMs).toEqual(expect.any(Number));
    expect(first.durationMs).toEqual(expect.any(Number));
  });

  it('a second start while one runs answers 409 naming the running run', async () => {
    // A slow page keeps the run going long enough to ask twice.
    await stack.sb.hook('faults', { route: 'graphql', delayMs: 3000, count: 1 });
    expect((await startSync()).status).toBe(202);
    const second = await eventually(async () => {
      const r = await startSync();
      return r.status === 409 && r;
    }, 'a 409 while the run is going');
    expect(second.body).toMatchObject({ code: 'sync_running', running: { state: expect.any(String) } });
    expect(second.text).not.toMatch(/runtime\/webhooks|statusQueryGetUri|system-key/);
    await latestFinished(1);
  });

  it('a run failed by a sandbox fault is recorded as failed, with the error and the action that fixes it', async () => {
    // Every stream's next request is refused (HTTP 400 is not retried).
    await stack.sb.hook('faults', { route: 'graphql', status: 400, count: 6 });
    expect((await startSync()).status).toBe(202);
    const list = await latestFinished(2);
    failed = list[0];
    expect(failed.outcome).toBe('failed');
    // The sandbox answers the refused requests with a GraphQL error: the stream's query, says the action.
    expect(failed.error).toMatchObject({
      code: 'graphql_errors',
      action: errorText('graphql_errors').action,
    });
    expect(failed.error?.action).toMatch(/query/);
    expect(Object.values(failed.streams).some((s) => !s.ok && s.errorCode === 'graphql_errors')).toBe(true);
    // The log records the alert rules read carry exactly the fields their queries use.
    const record = stack.logRecords().find((l) => l.message === 'sync run failed' && l.runId === failed.id);
    for (const field of ALERT_RECORDS['sync run failed'])
      expect([field, record?.[field]]).toEqual([field, expect.anything()]);
    const ok = stack.logRecords().find((l) => l.message === 'sync run completed' && l.runId === first.id);
    for (const field of ALERT_RECORDS['sync run completed'])
      expect([field, ok?.[field]]).toEqual([field, expect.anything()]);
  });

  it('the next run resumes the failed one and says so', async () => {
    expect((await startSync()).status).toBe(202);
    // Resumed under the failed run's id: its summary is replaced, not added.
    const resumed = await eventually(async () => {
      const [latest] = (await runs('?kind=sync')).runs;
      return latest.trigger === 'resumed' && latest.outcome !== 'running' && latest;
    }, 'the resumed run to finish');
    expect(resumed).toMatchObject({ id: failed.id, outcome: 'succeeded' });
  });

  it('twelve starts at once after a finished run: one 202, the rest 409 — never a 500', async () => {
    // A slow first page keeps the started run going while the others arrive.
    await stack.sb.hook('faults', { route: 'graphql', delayMs: 2000, count: 1 });
    const before = (await runs('?kind=sync')).runs.length;
    const answers = await Promise.all(Array.from({ length: 12 }, () => startSync()));
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses).toEqual([202, ...Array<number>(11).fill(409)]);
    for (const a of answers.filter((r) => r.status === 409))
      expect(a.body).toMatchObject({ code: 'sync_running' });
    const list = await latestFinished(before);
    expect(list.length).toBe(before + 1);
    expect(list[0]).toMatchObject({ trigger: 'manual', outcome: 'succeeded' });
  });

  it('GET /api/manage/runs pages newest first; one run by id; bad input is a 400 naming the parameter', async () => {
    const all = (await runs()).runs;
    expect(all.length).toBe(4); // the resumed run replaced the failed one’s summary; one of the twelve starts ran
    expect(all.map((r) => r.startedAt)).toEqual([...all.map((r) => r.startedAt)].sort().reverse());
    const page1 = await runs('?limit=2');
    expect(page1.runs.map((r) => r.id)).toEqual(all.slice(0, 2).map((r) => r.id));
    expect(page1.next).toBeDefined();
    const page2 = await runs(page1.next);
    expect(page2.runs.map((r) => r.id)).toEqual(all.slice(2).map((r) => r.id));
    const one = await stack.json(`manage/runs/${encodeURIComponent(first.id)}`);
    expect(one.body).toMatchObject({ id: first.id, outcome: 'succeeded' });
    expect((await stack.json('manage/runs/no-such-run')).status).toBe(404);
    const bad = await stack.json('manage/runs?limit=0&kind=nope');
    expect(bad.status).toBe(400);
    expect(bad.body.detail).toMatch(/limit/);
    expect(bad.body.detail).toMatch(/kind/);
    // Admin key only.
    expect((await stack.json('manage/runs', {}, stack.keys.function)).status).toBe(401);
  });

  it('the status page lists every run with its outcome, one chart mark per run', async () => {
    const res = await stack.api(`manage/status?code=${stack.keys.master}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toContain("default-src 'none'");
    const html = await res.text();
    const all = (await runs()).runs;
    for (const r of all) expect(html).toContain(`data-run="${r.id}"`);
    for (const id of ['chart-runs', 'chart-streams', 'chart-duration'])
      expect(
        html
          .split(`id="${id}"`)[1]
          .split('</svg>')[0]
          .match(/class="run-mark/g)?.length,
      ).toBe(all.length);
    expect(html).toContain('href="../manage?code=');
    // The secret store it names is the one configured (LOCAL_SECRETS_FILE), not a default path.
    expect(html).toContain(`development secret file (${stack.secretsFile})`);
  });
});

describe('doctor at GET /api/manage/doctor', () => {
  it('against a healthy sandbox every check is ok or a warning; after the credential is revoked, it fails naming the fix', async () => {
    const healthy = await stack.json('manage/doctor');
    expect(healthy.status).toBe(200);
    expect(healthy.body.ok).toBe(true);
    const states = Object.fromEntries(
      (healthy.body.checks as Array<{ name: string; state: string }>).map((c) => [c.name, c.state]),
    );
    expect(states).toMatchObject({
      configuration: 'ok',
      'secret store': 'ok',
      'identity provider': 'ok',
      'client credentials': 'ok',
      GraphQL: 'ok',
      'read-only credential': 'ok',
      storage: 'ok',
      'delegated session': 'ok',
    });
    expect(healthy.text).not.toContain(stack.sb.clientSecret);

    await stack.sb.hook(`credentials/${stack.sb.clientId}/revoke`);
    // The app's cached token stays valid until it expires; doctor asks for a fresh one through the provider.
    await stack.advance(400);
    const broken = await stack.json('manage/doctor');
    expect(broken.body.ok).toBe(false);
    const credential = (broken.body.checks as Array<{ name: string; state: string; action?: string }>).find(
      (c) => c.name === 'client credentials',
    );
    expect(credential).toMatchObject({ state: 'fail', action: expect.stringContaining('API Credentials') });
    const rejected = stack.logRecords().find((l) => l.message === 'M2M credential rejected');
    for (const field of ALERT_RECORDS['M2M credential rejected'])
      expect([field, rejected?.[field]]).toEqual([field, expect.anything()]);
    expect(broken.text).not.toContain(stack.sb.clientSecret);
  });
});
