import type { BlobServiceClient } from '@azure/storage-blob';
import { gunzipSync } from 'node:zlib';
import type { Change } from '../../shared/changes';
import { LocalFileSecretStore } from '../../shared/secrets';
import { eventually } from '../helpers/host';
import { startPostgraphileTenant, TENANT_ROWS, type PostgraphileTenant } from '../helpers/postgraphile';
import { stackFixture, type Stack } from '../helpers/stack';

/**
 * The sync as deployed against a tenant nobody here wrote: the timer starts the orchestration on the local host,
 * which discovers PostGraphile's schema, reads its tables — the child stream after its parent, in slices of one
 * second so that the child's listing stops and resumes between parents — and writes to Azurite (blob sink, state).
 * Only the Functions host is stood in for.
 */
jest.setTimeout(240_000);

let pgt: PostgraphileTenant;
let stack: Stack;
let blobs: BlobServiceClient;

beforeAll(async () => {
  pgt = await startPostgraphileTenant();
  stack = await stackFixture({
    sandbox: { records: 0 },
    env: { ...pgt.settings, SYNC_SINKS: 'blob', ACTIVITY_SLICE_SECONDS: '1' },
  });
  // The host signs in with PostGraphile's identity provider's client, not the stack's sandbox's.
  await new LocalFileSecretStore(stack.secretsFile).set('tenant-client-secret', pgt.clientSecret);
  blobs = stack.blobService();
});
afterAll(async () => {
  await stack?.close();
  await pgt?.stop();
});

interface Status {
  runtimeStatus: string;
  customStatus: { runId: string; state: string; streams: Record<string, { state: string; error?: string }> };
}
const instance = async (): Promise<Status | undefined> => {
  const res = await fetch(
    `${stack.url}/runtime/webhooks/durabletask/instances/sync-acme?code=${stack.keys.system}`,
  );
  return res.status === 200 || res.status === 202 ? ((await res.json()) as Status) : undefined;
};
const runSync = async (previous?: string) => {
  expect((await stack.runFunction('syncTimer')).status).toBeLessThan(300);
  return eventually(
    async () => {
      const s = await instance();
      return (
        s?.customStatus?.runId !== previous && ['Completed', 'Failed'].includes(s?.runtimeStatus ?? '') && s
      );
    },
    'the sync run to finish',
    180_000,
  );
};
const container = () => blobs.getContainerClient('sync-changes');
const manifest = async (runId: string) =>
  JSON.parse(
    (await container().getBlobClient(`acme/${runId}/manifest.json`).downloadToBuffer()).toString('utf8'),
  ) as {
    ok: boolean;
    streams: Record<string, { counts: Record<string, number> }>;
  };
const changes = async (runId: string, stream: string): Promise<Change[]> => {
  const blob = container().getBlobClient(`acme/${runId}/${stream}.ndjson.gz`);
  if (!(await blob.exists())) return [];
  const text = gunzipSync(await blob.downloadToBuffer()).toString('utf8');
  return text
    ? text
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Change)
    : [];
};

describe('PostGraphile through the local host', () => {
  it('a first run delivers every row once, every child once after its parent (in slices); the next run one insert and one update as two changes', async () => {
    const first = await runSync();
    expect([first.runtimeStatus, first.customStatus.state]).toEqual(['Completed', 'completed']);
    const runId = first.customStatus.runId;
    const m = await manifest(runId);
    expect(m.ok).toBe(true);
    expect(Object.fromEntries(Object.entries(m.streams).map(([k, v]) => [k, v.counts.created]))).toEqual({
      allAuditEntries: TENANT_ROWS.audit_entry.distinct,
      allControls: TENANT_ROWS.control,
      allKpiValues: TENANT_ROWS.kpi_value,
      allOrganisations: TENANT_ROWS.organisation,
      allPeople: TENANT_ROWS.person,
      allReadings: 100,
      evidencesByControlId: TENANT_ROWS.evidence,
    });
    const evidence = await changes(runId, 'evidencesByControlId');
    const rows = await pgt.pg.query<{ id: string; control_id: number }>(
      'SELECT id, control_id FROM app.evidence',
    );
    expect(evidence.map((c) => JSON.parse(c.id)).sort()).toEqual(
      rows.map((r) => [r.control_id, r.id]).sort(),
    );

    await pgt.pg.query(`INSERT INTO app.kpi_value (kpi_id, period, value) VALUES (9, '2027-01', 1)`);
    await pgt.pg.query(`UPDATE app.control SET title = 'Retitled' WHERE id = 150`);
    const second = await runSync(runId);
    expect(second.runtimeStatus).toBe('Completed');
    const m2 = await manifest(second.customStatus.runId);
    const moved = Object.entries(m2.streams).filter(
      ([, v]) => v.counts.created + v.counts.updated + v.counts.deleted > 0,
    );
    expect(moved.map(([k, v]) => [k, v.counts.created, v.counts.updated])).toEqual([
      ['allControls', 0, 1],
      ['allKpiValues', 1, 0],
    ]);
  });
});
