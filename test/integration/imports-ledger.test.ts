import { randomUUID } from 'node:crypto';
import '../../shared/app'; // the app composed: its features' codes registered, as in every process that runs them
import { TableClient } from '@azure/data-tables';
import { BlobServiceClient } from '@azure/storage-blob';
import { startAzurite, type RunningAzurite } from '../../cli/azurite';
import { TenantGraphqlClient, type RequestOptions } from '../../shared/graphql/client';
import { applyBatch, skipRest } from '../../shared/imports/apply';
import { BUILT_IN_OPERATIONS } from '../../shared/imports/operations';
import {
  AzureImportStore,
  type ImportBatch,
  type ImportStore,
  type ItemOutcome,
} from '../../shared/imports/store';
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
/** `n` items updating KPIs `from + 1` on (the sandbox has 200). */
const batchOf = (n: number, from = 0) => ({
  operation: 'updateKpi',
  document: BUILT_IN_OPERATIONS.updateKpi.document,
  items: Array.from({ length: n }, (_, i) => ({
    key: `k${i}`,
    variables: { id: `kpi-${String(from + i + 1).padStart(7, '0')}`, input: { value: 500 + i } },
  })),
});

/** A store that passes every call to `inner`, for wrappers to override some. */
class PassingStore implements ImportStore {
  constructor(protected readonly inner: ImportStore) {}
  saveBatch = (id: string, batch: ImportBatch) => this.inner.saveBatch(id, batch);
  batch = (id: string) => this.inner.batch(id);
  keys = (id: string) => this.inner.keys(id);
  progress(id: string) {
    return this.inner.progress(id);
  }
  commit(id: string, seq: number, outcomes: ItemOutcome[], window: [number, number] | null, attempt: string) {
    return this.inner.commit(id, seq, outcomes, window, attempt);
  }
  begin(id: string, window: [number, number], attempt: string) {
    return this.inner.begin(id, window, attempt);
  }
  end = (id: string, endedAt: string) => this.inner.end(id, endedAt);
  expire = (cutoff: string) => this.inner.expire(cutoff);
}

/** The ledger as a host sees it that stops at its `stopAt`-th commit: that write never lands, nothing runs after it. */
class StoppingStore extends PassingStore {
  private commits = 0;
  constructor(
    inner: ImportStore,
    private readonly stopAt: number,
    private readonly host: AbortController,
  ) {
    super(inner);
  }
  override async commit(...args: Parameters<ImportStore['commit']>) {
    this.write();
    return super.commit(...args);
  }
  override async begin(...args: Parameters<ImportStore['begin']>) {
    this.write();
    return super.begin(...args);
  }
  private write() {
    if (++this.commits === this.stopAt) this.host.abort(new Error('the host stopped'));
    this.host.signal.throwIfAborted();
  }
}

/** The ledger's calls, in order, by name. */
class RecordingStore extends PassingStore {
  readonly calls: string[] = [];
  override progress(id: string) {
    this.calls.push('progress');
    return super.progress(id);
  }
  override commit(...args: Parameters<ImportStore['commit']>) {
    this.calls.push('commit');
    return super.commit(...args);
  }
  override begin(...args: Parameters<ImportStore['begin']>) {
    this.calls.push('begin');
    return super.begin(...args);
  }
}

/** The admin's client, counting each item's mutations as they are sent (by the KPI's id). */
class CountingClient extends TenantGraphqlClient {
  readonly sent = new Map<string, number>();
  override request<T>(document: string, options: RequestOptions<T> = {}): Promise<T> {
    const id = String((options.variables as { id: string }).id);
    this.sent.set(id, (this.sent.get(id) ?? 0) + 1);
    return super.request(document, options);
  }
}

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
      'a host that stopped',
    );
    const before = await mutations();
    const result = await applyBatch(id, batch, store, graphql, { windowItems: 3 });
    expect(result.counts).toEqual({ applied: 6, failed: 0, outcome_unknown: 4, skipped: 0, pending: 0 });
    expect((await mutations()) - before).toBe(4); // items 6–9 only
    const { outcomes, window } = await store.progress(id);
    expect(window).toBeUndefined();
    expect([2, 3, 4, 5].map((i) => outcomes.get(i)?.state)).toEqual(Array(4).fill('outcome_unknown'));
    // A replayed activity: everything has its outcome, nothing is sent.
    const again = await applyBatch(id, batch, store, graphql);
    expect(again.counts).toEqual(result.counts);
    expect((await mutations()) - before).toBe(4);
  });

  it('a host stopped at any commit: at most a window of items (those in flight included) are outcome_unknown, and no item is sent twice', async () => {
    const token = (await sb.personTokens('admin')).access_token;
    for (const stopAt of [2, 3, 5]) {
      const id = randomUUID();
      const batch = batchOf(60);
      await store.saveBatch(id, batch);
      const client = new CountingClient(`${sb.baseUrl}/graphql`, {
        kind: 'delegated',
        getToken: async () => token,
        invalidate: () => undefined,
      });
      const host = new AbortController();
      await expect(
        applyBatch(id, batch, new StoppingStore(store, stopAt, host), client, {
          windowItems: 10,
          abortSignal: host.signal,
        }),
      ).rejects.toThrow();
      // The next attempt (a restarted host, a replayed activity) on what the ledger holds.
      const result = await applyBatch(id, batch, store, client, { windowItems: 10 });
      expect(result.counts.pending).toBe(0);
      expect(result.counts.applied + result.counts.outcome_unknown).toBe(60);
      const { outcomes } = await store.progress(id);
      const unknown = [...outcomes.values()].filter((o) => o.state === 'outcome_unknown').length;
      expect(result.counts.outcome_unknown).toBe(unknown);
      expect(unknown).toBeGreaterThan(0);
      // docs/import.md, "Exactly once": the window recorded holds at most `windowItems`, those in flight included.
      expect(unknown).toBeLessThanOrEqual(10);
      expect(result.counts.applied).toBe(60 - unknown);
      // Every item sent at most once; each with a known outcome exactly once (an unknown one may not have left).
      expect(Math.max(...client.sent.values())).toBe(1);
      for (const [index, o] of outcomes)
        if (o.code !== 'outcome_unknown')
          expect(client.sent.get(batch.items[index].variables.id as string)).toBe(1);
    }
  });

  it('an item slow to answer while the others go on: no recorded window ever leaves more than windowItems items without an outcome', async () => {
    const id = randomUUID();
    const batch = batchOf(80);
    await store.saveBatch(id, batch);
    const token = (await sb.personTokens('admin')).access_token;
    // Item 5 answers only after the other lanes have had time to run far past it.
    class SlowClient extends CountingClient {
      override async request<T>(document: string, options: RequestOptions<T> = {}): Promise<T> {
        if ((options.variables as { id: string }).id === batch.items[5].variables.id)
          await new Promise((resolve) => setTimeout(resolve, 800));
        return super.request(document, options);
      }
    }
    const client = new SlowClient(`${sb.baseUrl}/graphql`, {
      kind: 'delegated',
      getToken: async () => token,
      invalidate: () => undefined,
    });
    // What a host stopping right after each write would leave unknown: the window's items with no outcome yet.
    const recorded = new Set<number>();
    const unknownAfter: number[] = [];
    const afterCommits: number[] = [];
    const recordedAt = new Map<number, number>();
    const checking: ImportStore = {
      saveBatch: (i, b) => store.saveBatch(i, b),
      batch: (i) => store.batch(i),
      keys: (i) => store.keys(i),
      progress: (i) => store.progress(i),
      end: (i, at) => store.end(i, at),
      expire: (cutoff) => store.expire(cutoff),
      begin: async (i, window, attempt) => {
        const made = await store.begin(i, window, attempt);
        unknownAfter.push(window[1] - window[0]);
        return made;
      },
      commit: async (i, seq, outcomes, window, attempt) => {
        await store.commit(i, seq, outcomes, window, attempt);
        for (const o of outcomes) {
          recorded.add(o.index);
          recordedAt.set(o.index, afterCommits.length);
        }
        let unknown = 0;
        if (window) for (let x = window[0]; x < window[1]; x++) if (!recorded.has(x)) unknown++;
        unknownAfter.push(unknown);
        afterCommits.push(unknown);
      },
    };
    const result = await applyBatch(id, batch, checking, client, { windowItems: 10 });
    expect(result.counts).toEqual({ applied: 80, failed: 0, outcome_unknown: 0, skipped: 0, pending: 0 });
    expect(Math.max(...client.sent.values())).toBe(1);
    expect(Math.max(...unknownAfter)).toBeLessThanOrEqual(10);
    // The bound was reached after the writes (not only the first window's): the check above is not vacuous.
    expect(Math.max(...afterCommits)).toBeGreaterThanOrEqual(8);
    // The lanes went on past item 5 by more than a window while it was held: item 20 was recorded before it.
    expect(recordedAt.get(20)).toBeLessThan(recordedAt.get(5) ?? -1);
  });

  it('a fresh import records its first window in one write, reading nothing first; a retry of that write finds it its own, any other attempt finds the ledger', async () => {
    const id = randomUUID();
    const batch = batchOf(30);
    await store.saveBatch(id, batch);
    const recording = new RecordingStore(store);
    const before = await mutations();
    const result = await applyBatch(id, batch, recording, graphql, { windowItems: 10 });
    expect(result.counts).toEqual({ applied: 30, failed: 0, outcome_unknown: 0, skipped: 0, pending: 0 });
    expect(recording.calls[0]).toBe('begin');
    expect(recording.calls).not.toContain('progress');
    expect((await mutations()) - before).toBe(30);
    // Run again (a replayed activity): the import has commits, so it reads them, and sends nothing.
    const again = new RecordingStore(store);
    expect((await applyBatch(id, batch, again, graphql)).counts).toEqual(result.counts);
    expect(again.calls.slice(0, 2)).toEqual(['begin', 'progress']);
    expect((await mutations()) - before).toBe(30);

    // The first window's write as the SDK may send it twice (its answer lost): the second finds the row its own.
    const other = randomUUID();
    await store.saveBatch(other, batch);
    expect(await store.begin(other, [0, 10], 'attempt-1')).toBe(true);
    expect(await store.begin(other, [0, 10], 'attempt-1')).toBe(true);
    // Another attempt (a host that stopped after writing it): the window's items may have gone, so none is sent.
    expect(await store.begin(other, [0, 10], 'attempt-2')).toBe(false);
    const resumed = await applyBatch(other, batch, store, graphql, { windowItems: 10 });
    expect(resumed.counts).toEqual({ applied: 20, failed: 0, outcome_unknown: 10, skipped: 0, pending: 0 });
    const { outcomes } = await store.progress(other);
    expect(outcomes.get(9)?.state).toBe('outcome_unknown');
    expect((await mutations()) - before).toBe(50);
  });

  it('a share at a time (the activity’s limit), resumed from the ledger, each item once', async () => {
    const id = randomUUID();
    const batch = batchOf(25);
    await store.saveBatch(id, batch);
    const before = await mutations();
    const first = await applyBatch(id, batch, store, graphql, { limit: 10, windowItems: 4 });
    expect(first.counts).toEqual({ applied: 10, failed: 0, outcome_unknown: 0, skipped: 0, pending: 15 });
    const rest = await applyBatch(id, batch, store, graphql, { windowItems: 4 });
    expect(rest.counts).toEqual({ applied: 25, failed: 0, outcome_unknown: 0, skipped: 0, pending: 0 });
    expect((await mutations()) - before).toBe(25);
    expect((await store.batch(id)).items).toEqual(batch.items);
  });

  it('an activity hands back after its slice (ACTIVITY_SLICE_SECONDS): the items not sent stay pending for the next', async () => {
    const id = randomUUID();
    const batch = batchOf(30, 120);
    await store.saveBatch(id, batch);
    const before = await mutations();
    // A clock that moves a step per look: the deadline comes after a few items, whatever the machine's speed.
    let t = 0;
    const clock = { now: () => t++ };
    const first = await applyBatch(id, batch, store, graphql, { deadlineMs: 6, clock, windowItems: 10 });
    expect(first.counts.applied).toBeGreaterThan(0);
    expect(first.counts.pending).toBeGreaterThan(0);
    expect(first.counts.applied + first.counts.pending).toBe(30);
    // A deadline already past still sends one item: every activity makes progress.
    const second = await applyBatch(id, batch, store, graphql, { deadlineMs: 0, clock, windowItems: 10 });
    expect(second.counts.applied).toBeGreaterThan(first.counts.applied);
    const rest = await applyBatch(id, batch, store, graphql, { windowItems: 10 });
    expect(rest.counts).toEqual({ applied: 30, failed: 0, outcome_unknown: 0, skipped: 0, pending: 0 });
    expect((await mutations()) - before).toBe(30);
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
    expect(result.counts).toEqual({ applied: 10, failed: 100, outcome_unknown: 0, skipped: 0, pending: 10 });
    const { outcomes } = await store.progress(id);
    expect(outcomes.get(99)).toEqual({
      index: 99,
      state: 'failed',
      code: 'import_item_refused',
      message: `${message}100`,
    });
    const end = await skipRest(id, 120, store, 'the import ended');
    expect(end).toEqual({ applied: 10, failed: 100, outcome_unknown: 0, skipped: 10, pending: 0 });
  });

  it('two runs of the apply step for one import at once (an activity delivered twice): no item is sent twice, and each item’s state is what the tenant saw', async () => {
    const token = (await sb.personTokens('admin')).access_token;
    for (const [startGapMs, windowItems] of [
      [0, 10],
      [150, 10],
      [400, 6],
    ] as const) {
      const id = randomUUID();
      const batch = batchOf(40, 150); // KPIs no other test refuses
      await store.saveBatch(id, batch);
      const client = new CountingClient(`${sb.baseUrl}/graphql`, {
        kind: 'delegated',
        getToken: async () => token,
        invalidate: () => undefined,
      });
      // Answers slow enough that the two runs overlap for most of the batch.
      await sb.hook('faults', { route: 'graphql', count: 80, delayMs: 40 });
      const before = await mutations();
      const one = applyBatch(id, batch, store, client, { windowItems });
      await new Promise((resolve) => setTimeout(resolve, startGapMs));
      const two = applyBatch(id, batch, store, client, { windowItems });
      const results = await Promise.all([one, two]);
      await sb.hook('faults/clear');
      // One of them held the import to its end, or each stopped where the other took over; a last run finishes.
      const last = await applyBatch(id, batch, store, client, { windowItems });
      expect(last.counts.pending).toBe(0);
      expect(Math.max(...client.sent.values())).toBe(1);
      const ran = (await mutations()) - before;
      expect(ran).toBe([...client.sent.values()].reduce((a, b) => a + b, 0));
      const { outcomes } = await store.progress(id);
      for (const [index, o] of outcomes) {
        const sent = client.sent.get(batch.items[index].variables.id as string) ?? 0;
        // Applied: the tenant ran it once. Unknown: it may have left, once at most.
        if (o.state === 'applied') expect([index, sent]).toEqual([index, 1]);
        else expect([index, o.state]).toEqual([index, 'outcome_unknown']);
      }
      expect(results.some((r) => r.superseded) || startGapMs > 0).toBe(true);
    }
  });

  it('a ledger written before outcome_unknown was a state (a failure with its code) reads as outcome_unknown', async () => {
    const id = randomUUID();
    const table = TableClient.fromConnectionString(azurite.connectionString, 'importledger', {
      allowInsecureConnection: true,
    });
    await table.createEntity({
      partitionKey: `import_${id}`,
      rowKey: 'c_0000000_0000',
      outcomes: JSON.stringify([
        [0, 'a'],
        [1, 'f', 'outcome_unknown', 'the host stopped'],
        [2, 'f', 'import_item_refused', 'locked'],
      ]),
      last: true,
    });
    const { outcomes } = await store.progress(id);
    expect([...outcomes.values()].map((o) => o.state)).toEqual(['applied', 'outcome_unknown', 'failed']);
  });

  it('ended imports’ items and ledgers expire after the retention; a running or waiting import’s never do', async () => {
    const [ended, running] = [randomUUID(), randomUUID()];
    for (const id of [ended, running]) {
      await store.saveBatch(id, batchOf(3, 190));
      await applyBatch(id, batchOf(3, 190), store, graphql, { limit: 2 });
    }
    await store.end(ended, '2026-01-01T00:00:00.000Z');
    expect(await store.keys(ended)).toEqual(['k0', 'k1', 'k2']);
    expect(await store.expire('2025-12-31T00:00:00.000Z')).toBe(0);
    expect(await store.expire('2026-01-02T00:00:00.000Z')).toBe(1);
    await expect(store.batch(ended)).rejects.toMatchObject({ statusCode: 404 });
    expect(await store.keys(ended)).toBeUndefined(); // a status poll then shows the import's own counts
    expect((await store.progress(ended)).commits).toBe(0);
    // The running import (older rows, no end) keeps everything: its ledger is what stops a second send.
    expect((await store.progress(running)).outcomes.size).toBe(2);
    expect((await store.batch(running)).items).toHaveLength(3);
    expect(await store.expire('2099-01-01T00:00:00.000Z')).toBe(0);
  });
});
