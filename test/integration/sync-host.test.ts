import type { BlobServiceClient } from '@azure/storage-blob';
import { gunzipSync } from 'node:zlib';
import { LocalFileSecretStore } from '../../shared/secrets';
import type { Change } from '../../shared/changes';
// Read through the API, which shows each kind's details: typed as the sync's (the kind these tests read most).
import type { SyncRunSummary as RunSummary } from '../../shared/sync/run-details';
import { eventually } from '../helpers/host';
import { stackFixture, type Stack } from '../helpers/stack';
import { webhookReceiver } from '../helpers/webhook-receiver';

/**
 * The sync as deployed: the timer starts the orchestration on the local host, which reads the sandbox and
 * writes to Azurite (blob sink, state) and to a local receiver (webhook sink). Only the Functions host is
 * stood in for (devhost/); storage, the tenant service and the receiver are real servers.
 */
jest.setTimeout(120_000);

const STREAMS = ['controls', 'evidence', 'personnel', 'kpis', 'reports', 'users'];
let stack: Stack;
let receiver: Awaited<ReturnType<typeof webhookReceiver>>;
let blobs: BlobServiceClient;

beforeAll(async () => {
  receiver = await webhookReceiver();
  stack = await stackFixture({
    sandbox: { records: 120 },
    // A full pass a minute after the last one (a day by default): the clock is moved a minute, not a day, because
    // the webhook receiver checks signatures' timestamps against its own clock.
    env: { SYNC_SINKS: 'blob,webhook', DOWNSTREAM_WEBHOOK_URL: receiver.url, SYNC_FULL_PASS_EVERY: '1m' },
  });
  await new LocalFileSecretStore(stack.secretsFile).set('downstream-webhook-secret', receiver.secret);
  blobs = stack.blobService();
});
afterAll(async () => {
  await stack?.close();
  await receiver?.close();
});

interface SyncStatusBody {
  runtimeStatus: string;
  customStatus: {
    runId: string;
    state: string;
    resumed: boolean;
    streams: Record<string, { state: string; counts?: Record<string, number>; error?: string }>;
  };
}
const instance = async (): Promise<SyncStatusBody | undefined> => {
  const res = await fetch(
    `${stack.url}/runtime/webhooks/durabletask/instances/sync-acme?code=${stack.keys.system}`,
  );
  // 200 when finished, 202 while running.
  return res.status === 200 || res.status === 202 ? ((await res.json()) as SyncStatusBody) : undefined;
};
const finished = () =>
  eventually(
    async () => {
      const s = await instance();
      return s && ['Completed', 'Failed'].includes(s.runtimeStatus) && s;
    },
    'the sync run to finish',
    90_000,
  );
const tick = async () => {
  const res = await stack.runFunction('syncTimer');
  expect(res.status).toBeLessThan(300);
};
const runSync = async () => {
  await tick();
  await eventually(async () => (await instance())?.customStatus?.runId, 'the run to start');
  return finished();
};

const container = () => blobs.getContainerClient('sync-changes');
const readChanges = async (runId: string, stream: string): Promise<Change[]> => {
  const buf = await container().getBlobClient(`acme/${runId}/${stream}.ndjson.gz`).downloadToBuffer();
  const text = gunzipSync(buf).toString('utf8'); // one gzip member per page: gunzip reads them all
  return text
    ? text
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Change)
    : [];
};
const manifest = async (runId: string) =>
  JSON.parse(
    (await container().getBlobClient(`acme/${runId}/manifest.json`).downloadToBuffer()).toString('utf8'),
  );
const webhookChanges = (runId: string) =>
  receiver
    .unique()
    .filter((m) => m.type === 'sync.changes' && m.data.runId === runId)
    .flatMap((m) => m.data.changes as Change[]);
const tokens = async () => (await stack.sb.hook('stats')).body.token.client_credentials as number;

describe('sync through the local host, Azurite and a webhook receiver', () => {
  let firstRun: string;

  it('the first run delivers every record as created to both sinks, with a manifest; one token for the run', async () => {
    const tokensBefore = await tokens();
    const status = await runSync();
    expect(status.runtimeStatus).toBe('Completed');
    expect(status.customStatus.state).toBe('completed');
    firstRun = status.customStatus.runId;
    const m = await manifest(firstRun);
    expect(m).toMatchObject({ tenant: 'acme', runId: firstRun, ok: true });
    for (const s of STREAMS) {
      expect(m.streams[s].counts).toEqual({ read: 120, created: 120, updated: 0, deleted: 0, unchanged: 0 });
      const changes = await readChanges(firstRun, s);
      expect(changes).toHaveLength(120);
      expect(new Set(changes.map((c) => c.changeId)).size).toBe(120);
      expect(changes.every((c) => c.kind === 'created' && c.stream === s && c.record)).toBe(true);
      // The webhook got the same changes, in verified, signed batches.
      expect(
        webhookChanges(firstRun)
          .filter((c) => c.stream === s)
          .map((c) => c.changeId)
          .sort(),
      ).toEqual(changes.map((c) => c.changeId).sort());
    }
    expect(receiver.rejected).toEqual([]);
    expect(receiver.unique().some((x) => x.type === 'sync.run.completed' && x.data.runId === firstRun)).toBe(
      true,
    );
    // Six streams of two pages each, well under 300 s: one token request.
    expect((await tokens()) - tokensBefore).toBe(1);
    expect(stack.logs()).not.toContain(stack.sb.clientSecret);
  });

  it('after data/mutate the next tick delivers exactly the creates and updates (incremental); the first tick a day after the last full pass, the deletes', async () => {
    const mutated = (
      await stack.sb.hook('data/mutate', { collection: 'evidence', creates: 4, updates: 3, deletes: 2 })
    ).body;
    const status = await runSync();
    expect(status.runtimeStatus).toBe('Completed');
    const runId = status.customStatus.runId;
    expect(runId).not.toBe(firstRun);
    const m = await manifest(runId);
    expect(m.streams.evidence.counts).toMatchObject({ created: 4, updated: 3, deleted: 0 });
    expect(m.streams.evidence.counts.read).toBeLessThan(20);
    expect(m.streams.users.counts).toMatchObject({ created: 0, updated: 0, deleted: 0 });
    const changes = await readChanges(runId, 'evidence');
    const ids = (kind: string) =>
      changes
        .filter((c) => c.kind === kind)
        .map((c) => c.id)
        .sort();
    expect(ids('created')).toEqual([...mutated.created].sort());
    expect(ids('updated')).toEqual([...mutated.updated].sort());
    expect(ids('deleted')).toEqual([]);
    expect(await readChanges(runId, 'users')).toEqual([]);
    const summary = (await stack.json(`manage/runs/${encodeURIComponent(runId)}`)).body as RunSummary;
    expect(summary.streams.evidence.pass).toBe('incremental');

    // SYNC_FULL_PASS_EVERY later by the host's clock: a full pass, which can see deletions.
    await stack.advance(61);
    const full = await runSync();
    const fullId = full.customStatus.runId;
    expect((await manifest(fullId)).streams.evidence.counts).toEqual({
      read: 122,
      created: 0,
      updated: 0,
      deleted: 2,
      unchanged: 122,
    });
    expect((await readChanges(fullId, 'evidence')).map((c) => [c.kind, c.id]).sort()).toEqual(
      mutated.deleted.map((id: string) => ['deleted', id]).sort(),
    );
    const fullSummary = (await stack.json(`manage/runs/${encodeURIComponent(fullId)}`)).body as RunSummary;
    expect(fullSummary.streams.evidence.pass).toBe('full');
  });

  it('a tick while a run is going is skipped and logged; a host killed mid-run resumes, delivering each change once', async () => {
    await stack.sb.hook('data/mutate', { collection: 'controls', creates: 0, updates: 120, deletes: 0 });
    await stack.sb.hook('data/mutate', { collection: 'kpis', creates: 0, updates: 120, deletes: 0 });
    // Slow pages, so the run is still going when the second tick and the kill come.
    await stack.sb.hook('faults', { route: 'graphql', delayMs: 500, count: 12 });
    const graphqlBefore = (await stack.sb.hook('stats')).body.graphql.queries as number;
    await tick();
    await eventually(async () => (await instance())?.runtimeStatus === 'Running', 'the run to be running');
    await tick();
    await eventually(async () => /sync tick skipped/.test(stack.logs()), 'the skipped tick in the log');
    await eventually(
      async () => ((await stack.sb.hook('stats')).body.graphql.queries as number) >= graphqlBefore + 4,
      'a few pages',
    );
    await stack.restart({ kill: true });
    // Waits for the run's end (the event), then checks how it got there: no budget for the resume itself.
    const status = await finished();
    expect(status.runtimeStatus).toBe('Completed');
    expect(stack.logs()).toMatch(/resumed from checkpoint/);
    const runId = status.customStatus.runId;
    for (const s of ['controls', 'kpis']) {
      const changes = await readChanges(runId, s);
      // Each record once: the page in flight at the kill was written again under the same page, not added.
      expect(changes).toHaveLength(120);
      expect(new Set(changes.map((c) => c.changeId)).size).toBe(120);
      expect(changes.every((c) => c.kind === 'updated')).toBe(true);
      // Webhook receivers may see a page again after a crash, always under the same webhook-id and change ids.
      const hooked = webhookChanges(runId).filter((c) => c.stream === s);
      expect(new Set(hooked.map((c) => c.changeId))).toEqual(new Set(changes.map((c) => c.changeId)));
      expect(hooked).toHaveLength(120);
    }
    expect((await manifest(runId)).streams.controls.counts).toMatchObject({ read: 120, updated: 120 });
    // The killed host's run ends in the run history like any other.
    expect((await stack.json(`manage/runs/${encodeURIComponent(runId)}`)).body).toMatchObject({
      id: runId,
      outcome: 'succeeded',
    });
  });

  it.each([
    ['500', { status: 500, count: 2 }],
    ['503 with Retry-After', { status: 503, retryAfterSeconds: 1, count: 1 }],
    ['429', { status: 429, retryAfterSeconds: 1, count: 2 }],
    ['connection reset', { reset: true, count: 2 }],
    ['slow answer', { delayMs: 1500, count: 1 }],
  ])(
    'a %s from GraphQL during a run is survived; the run completes with exact counts',
    async (_name, fault) => {
      const mutated = (
        await stack.sb.hook('data/mutate', { collection: 'reports', creates: 1, updates: 1, deletes: 0 })
      ).body;
      await stack.sb.hook('faults', { route: 'graphql', ...fault });
      const status = await runSync();
      expect(status.runtimeStatus).toBe('Completed');
      const m = await manifest(status.customStatus.runId);
      expect(m.ok).toBe(true);
      expect(m.streams.reports.counts).toMatchObject({ created: 1, updated: 1, deleted: 0 });
      expect((await readChanges(status.customStatus.runId, 'reports')).map((c) => c.id).sort()).toEqual(
        [...mutated.created, ...mutated.updated].sort(),
      );
    },
  );

  it('a fault that does not go away fails the run without deletions; the next run resumes it', async () => {
    const mutated = (
      await stack.sb.hook('data/mutate', { collection: 'personnel', creates: 0, updates: 0, deletes: 3 })
    ).body;
    // SYNC_FULL_PASS_EVERY on: full passes, the only ones that see deletions.
    await stack.advance(61);
    await stack.sb.hook('faults', { route: 'graphql', status: 400, count: 6 });
    const failed = await runSync();
    expect(failed.customStatus.state).toBe('failed');
    const runId = failed.customStatus.runId;
    expect(Object.values(failed.customStatus.streams).some((s) => s.state === 'failed' && s.error)).toBe(
      true,
    );
    const m = await manifest(runId);
    expect(m.ok).toBe(false);
    const resumed = await runSync();
    expect(resumed.customStatus).toMatchObject({ runId, resumed: true, state: 'completed' });
    const deleted = (await readChanges(runId, 'personnel')).filter((c) => c.kind === 'deleted');
    expect(deleted.map((c) => c.id).sort()).toEqual([...mutated.deleted].sort());
    expect((await manifest(runId)).ok).toBe(true);
  });

  it('a webhook receiver that is down fails the run; the next run resumes and delivers the changes', async () => {
    await stack.sb.hook('data/mutate', { collection: 'users', creates: 2, updates: 0, deletes: 0 });
    receiver.failNext(1000, 503);
    const failed = await runSync();
    receiver.failNext(0);
    expect(failed.customStatus.state).toBe('failed');
    expect(failed.customStatus.streams.users.error).toMatch(/webhook/);
    const resumed = await runSync();
    expect(resumed.customStatus.state).toBe('completed');
    const users = webhookChanges(resumed.customStatus.runId).filter((c) => c.stream === 'users');
    expect(users.map((c) => c.kind)).toEqual(['created', 'created']);
  });

  it('a credential revoked mid-run fails the run cleanly: snapshots untouched, nothing secret in the status or logs', async () => {
    await stack.sb.hook('data/mutate', { collection: 'controls', creates: 0, updates: 0, deletes: 5 });
    const state = blobs.getContainerClient('sync-state');
    const before = await state.getBlobClient('acme/controls.snapshot').downloadToBuffer();
    await stack.sb.hook('faults', { route: 'graphql', delayMs: 600, count: 12 });
    const graphqlBefore = (await stack.sb.hook('stats')).body.graphql.queries as number;
    await tick();
    await eventually(
      async () => ((await stack.sb.hook('stats')).body.graphql.queries as number) >= graphqlBefore + 1,
      'the run to be reading',
    );
    await stack.sb.hook(`credentials/${stack.sb.clientId}/revoke`);
    await stack.sb.advance(301); // the token the app holds expires; revocation is now enforced
    const status = await finished();
    expect(status.customStatus.state).toBe('failed');
    const errors = Object.values(status.customStatus.streams).map((s) => s.error ?? '');
    expect(errors.some((e) => /rejected M2M credential/.test(e))).toBe(true);
    expect(await state.getBlobClient('acme/controls.snapshot').downloadToBuffer()).toEqual(before);
    const text = JSON.stringify(status) + stack.logs();
    expect(text).not.toContain(stack.sb.clientSecret);
    expect(text).not.toContain(receiver.secret);
  });
});
