import { randomUUID } from 'node:crypto';
import { TableClient } from '@azure/data-tables';
import { BlobServiceClient } from '@azure/storage-blob';
import { startAzurite, type RunningAzurite } from '../../cli/azurite';
import { TenantGraphqlClient } from '../../shared/graphql/client';
import { applyBatch, skipRest } from '../../shared/imports/apply';
import { BUILT_IN_OPERATIONS } from '../../shared/imports/operations';
import { AzureImportStore } from '../../shared/imports/store';
import { sandboxFixture, type SandboxFixture } from '../helpers/sandbox';

jest.setTimeout(60_000);

/*
 * The per-item ledger on real Table and Blob storage (Azurite) against the sandbox, with an admin's token:
 * what a stopped host or a replayed activity leaves, and what the next attempt does with it.
 */
let azurite: RunningAzurite;
let sb: SandboxFixture;
let store: AzureImportStore;
let graphql: TenantGraphqlClient;

beforeAll(async () => {
  [azurite, sb] = await Promise.all([startAzurite(), sandboxFixture({ records: 200 })]);
  store = new AzureImportStore(
    TableClient.fromConnectionString(azurite.connectionString, 'importledger', {
      allowInsecureConnection: true,
    }),
    BlobServiceClient.fromConnectionString(azurite.connectionString),
  );
  const token = (await sb.personTokens('admin')).access_token;
  graphql = new TenantGraphqlClient(`${sb.baseUrl}/graphql`, {
    kind: 'delegated',
    getToken: async () => token,
    invalidate: () => undefined,
  });
});
afterAll(async () => {
  await sb?.close();
  await azurite?.stop();
});

const mutations = async () => (await sb.hook('stats')).body.graphql.mutations as number;
const batchOf = (n: number) => ({
  operation: 'updateKpi',
  document: BUILT_IN_OPERATIONS.updateKpi.document,
  items: Array.from({ length: n }, (_, i) => ({
    key: `k${i}`,
    variables: { id: `kpi-${String(i + 1).padStart(7, '0')}`, input: { value: 500 + i } },
  })),
});

describe('the import ledger', () => {
  it('a host stopped mid-window: the window’s items without an outcome are outcome_unknown and never sent again', async () => {
    const id = randomUUID();
    const batch = batchOf(10);
    await store.saveBatch(id, batch);
    // What a host leaves when it stops after items 0–1 were recorded and 2–5 were on their way.
    await store.commit(
      id,
      0,
      [
        { index: 0, state: 'applied' },
        { index: 1, state: 'applied' },
      ],
      [0, 6],
    );
    const before = await mutations();
    const result = await applyBatch(id, batch, store, graphql, { windowItems: 3 });
    expect(result.counts).toEqual({ applied: 6, failed: 4, skipped: 0, pending: 0 });
    expect((await mutations()) - before).toBe(4); // items 6–9 only
    const { outcomes, window } = await store.progress(id);
    expect(window).toBeUndefined();
    expect([2, 3, 4, 5].map((i) => outcomes.get(i)?.code)).toEqual(Array(4).fill('outcome_unknown'));
    // A replayed activity: everything has its outcome, nothing is sent.
    const again = await applyBatch(id, batch, store, graphql);
    expect(again.counts).toEqual(result.counts);
    expect((await mutations()) - before).toBe(4);
  });

  it('a share at a time (the activity’s limit), resumed from the ledger, each item once', async () => {
    const id = randomUUID();
    const batch = batchOf(25);
    await store.saveBatch(id, batch);
    const before = await mutations();
    const first = await applyBatch(id, batch, store, graphql, { limit: 10, windowItems: 4 });
    expect(first.counts).toEqual({ applied: 10, failed: 0, skipped: 0, pending: 15 });
    const rest = await applyBatch(id, batch, store, graphql, { windowItems: 4 });
    expect(rest.counts).toEqual({ applied: 25, failed: 0, skipped: 0, pending: 0 });
    expect((await mutations()) - before).toBe(25);
    expect((await store.batch(id)).items).toEqual(batch.items);
  });

  it('long refusals from the tenant are kept whole for every item (outcome rows split by size), then skipRest leaves nothing pending', async () => {
    const id = randomUUID();
    const batch = batchOf(120);
    await store.saveBatch(id, batch);
    const message = `locked: ${'x'.repeat(480)}`;
    for (let i = 1; i <= 100; i++)
      await sb.hook('mutations/refuse', {
        id: `kpi-${String(i).padStart(7, '0')}`,
        message: `${message}${i}`,
      });
    const result = await applyBatch(id, batch, store, graphql, { limit: 110 });
    expect(result.counts).toEqual({ applied: 10, failed: 100, skipped: 0, pending: 10 });
    const { outcomes } = await store.progress(id);
    expect(outcomes.get(99)).toEqual({
      index: 99,
      state: 'failed',
      code: 'import_item_refused',
      message: `${message}100`,
    });
    const end = await skipRest(id, 120, store, 'the import ended');
    expect(end).toEqual({ applied: 10, failed: 100, skipped: 10, pending: 0 });
  });
});
