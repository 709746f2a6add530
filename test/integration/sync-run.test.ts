import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OffsetClock } from '../../shared/clock';
import { LocalFileSecretStore } from '../../shared/secrets';
import { resolveStreams } from '../../sandbox/streams';
import type { Change } from '../../shared/changes';
import { syncAll } from '../../shared/sync/run-steps';
import { DirectorySink, tracedSink, type ChangeSink, type GroupingSink } from '../../shared/sinks';
import { decodeCheckpoint } from '../../shared/sync/checkpoint';
import { BlobServiceClient } from '@azure/storage-blob';
import { startAzurite } from '../../cli/azurite';
import { BlobSyncStateStore } from '../../shared/sync/blob-state';
import { FileSyncStateStore } from '../../shared/sync/file-state';
import { accessFixture } from '../helpers/access';
import { runCli } from '../helpers/cli';
import { sandboxFixture, type SandboxFixture } from '../helpers/sandbox';

jest.setTimeout(60_000);

let sb: SandboxFixture;
let dir: string;
beforeAll(async () => {
  sb = await sandboxFixture({ records: 120 });
});
afterAll(() => sb.close());
beforeEach(async () => {
  await sb.hook('reset');
  dir = await mkdtemp(join(tmpdir(), 'ti-sync-'));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

const delivered = async (runId: string, stream: string): Promise<Change[]> => {
  try {
    const text = await readFile(join(dir, 'out', runId, `${stream}.ndjson`), 'utf8');
    return text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
  } catch {
    return [];
  }
};

/** A stored snapshot's bytes, each chunk copied as it comes: a store may reuse a chunk's memory for the next. */
async function bytesOf(chunks: AsyncIterable<Buffer> | undefined): Promise<Buffer> {
  const got: Buffer[] = [];
  for await (const c of chunks ?? []) got.push(Buffer.from(c));
  return Buffer.concat(got);
}

/** The folder sink `out` behind a sink whose `failAt`-th write fails; what it took before is in `seen`. */
function failingAt(failAt: number, out: DirectorySink) {
  const seen: Change[] = [];
  let writes = 0;
  const sink: ChangeSink = {
    description: 'flaky',
    names: (stream) => out.names(stream),
    ownNames: [],
    write: async (batch) => {
      if (++writes === failAt) throw new Error('downstream unavailable');
      seen.push(...batch.changes);
      await out.write(batch);
    },
    endStream: (tenant, runId, stream, pages) => out.endStream(tenant, runId, stream, pages),
    finish: (manifest) => out.finish(manifest),
    erase: (...args) => out.erase(...args),
    close: async () => undefined,
  };
  return { sink, seen };
}

describe('sync run against the sandbox', () => {
  it('full run creates everything; after data/mutate an incremental pass delivers exactly the creations and updates, the next full pass the deletion; then nothing; one token', async () => {
    const a = await accessFixture(sb);
    const options = {
      tenant: sb.tenant,
      state: new FileSyncStateStore(join(dir, 'state')),
      sink: new DirectorySink(join(dir, 'out')),
    };
    const streams = resolveStreams();
    const first = await syncAll(a.graphql, streams, options);
    expect(first.ok).toBe(true);
    for (const s of first.streams)
      expect(s.counts).toEqual({ read: 120, created: 120, updated: 0, deleted: 0, unchanged: 0 });
    expect((await delivered(first.runId, 'kpis')).map((c) => c.kind)).toEqual(Array(120).fill('created'));
    const manifest = JSON.parse(await readFile(join(dir, 'out', first.runId, 'manifest.json'), 'utf8'));
    expect(manifest.streams.users).toMatchObject({ ok: true, counts: { created: 120 } });

    const mutated = (
      await sb.hook('data/mutate', { collection: 'controls', creates: 3, updates: 2, deletes: 1 })
    ).body;
    const second = await syncAll(a.graphql, streams, options);
    const controls = second.streams.find((s) => s.stream === 'controls');
    // Incremental: only what changed since the last pass (and what the overlap reads again, unchanged).
    expect(controls).toMatchObject({
      pass: 'incremental',
      counts: { created: 3, updated: 2, deleted: 0 },
    });
    expect(controls?.counts.read).toBeLessThan(20);
    const changes = await delivered(second.runId, 'controls');
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
    // A deletion cannot show in an incremental pass: the next full pass reports it.
    expect(changes.filter((c) => c.kind === 'deleted')).toEqual([]);
    for (const s of second.streams.filter((x) => x.stream !== 'controls'))
      expect(s.counts.created + s.counts.updated + s.counts.deleted).toBe(0);
    // No change id of this run was delivered before.
    const before = new Set((await delivered(first.runId, 'controls')).map((c) => c.changeId));
    expect(changes.filter((c) => before.has(c.changeId))).toEqual([]);

    const full = await syncAll(a.graphql, streams, { ...options, fullPass: true });
    const controlsFull = full.streams.find((s) => s.stream === 'controls');
    expect(controlsFull).toMatchObject({
      pass: 'full',
      counts: { read: 122, created: 0, updated: 0, deleted: 1, unchanged: 122 },
    });
    expect((await delivered(full.runId, 'controls')).map((c) => [c.kind, c.id])).toEqual([
      ['deleted', mutated.deleted[0]],
    ]);

    const fourth = await syncAll(a.graphql, streams, options);
    expect(fourth.streams.every((s) => s.counts.created + s.counts.updated + s.counts.deleted === 0)).toBe(
      true,
    );
    // Four runs, six streams, a page or two each: the cached M2M token served them all.
    expect((await sb.hook('stats')).body.token.client_credentials).toBe(1);
    await a.cleanup();
  });

  it('a record updated twice between passes is one change carrying its last content; a third pass finds nothing', async () => {
    const a = await accessFixture(sb);
    const options = {
      tenant: sb.tenant,
      state: new FileSyncStateStore(join(dir, 'state')),
      sink: new DirectorySink(join(dir, 'out')),
    };
    const streams = resolveStreams({ select: ['kpis'] });
    await syncAll(a.graphql, streams, options);
    await sb.hook('data/set', { collection: 'kpis', id: 'kpi-0000042', fields: { name: 'First rename' } });
    await sb.hook('data/set', { collection: 'kpis', id: 'kpi-0000042', fields: { name: 'Second rename' } });
    const second = await syncAll(a.graphql, streams, options);
    expect(second.streams[0]).toMatchObject({ pass: 'incremental', counts: { created: 0, updated: 1 } });
    const changes = await delivered(second.runId, 'kpis');
    expect(changes.map((c) => [c.kind, c.id, (c.record as { name: string }).name])).toEqual([
      ['updated', 'kpi-0000042', 'Second rename'],
    ]);
    // The overlap reads the record again: unchanged since, it is no change.
    const third = await syncAll(a.graphql, streams, options);
    expect(third.streams[0]).toMatchObject({ pass: 'incremental', counts: { created: 0, updated: 0 } });
    expect(third.streams[0].counts.read).toBeGreaterThanOrEqual(1);
    await a.cleanup();
  });

  it('clocks that jump: ours backwards or a day ahead makes a full pass; the service’s ahead of ours changes nothing', async () => {
    const a = await accessFixture(sb);
    const clock = new OffsetClock();
    const options = {
      tenant: sb.tenant,
      state: new FileSyncStateStore(join(dir, 'state')),
      sink: new DirectorySink(join(dir, 'out')),
      clock,
    };
    const streams = resolveStreams({ select: ['controls'] });
    await syncAll(a.graphql, streams, options);
    // The service's clock an hour ahead of ours: the high-water mark is the records' own time, not ours.
    await sb.hook('clock', { advanceSeconds: 3600 });
    const mutated = (
      await sb.hook('data/mutate', { collection: 'controls', creates: 1, updates: 1, deletes: 1 })
    ).body as { deleted: string[] };
    const ahead = await syncAll(a.graphql, streams, options);
    expect(ahead.streams[0]).toMatchObject({
      pass: 'incremental',
      counts: { created: 1, updated: 1, deleted: 0 },
    });
    // Ours jumps two hours back: when the last full pass was cannot be trusted, so this one is full (and sees
    // the deletion the incremental pass could not).
    clock.advanceSeconds(-7200);
    const back = await syncAll(a.graphql, streams, options);
    expect(back.streams[0]).toMatchObject({
      pass: 'full',
      counts: { read: 120, created: 0, updated: 0, deleted: 1 },
    });
    // A record changed after the mark, then ours a day ahead: full again, and the change is there once.
    const live = ['ctl-0000007', 'ctl-0000008'].find((id) => !mutated.deleted.includes(id));
    expect(
      (await sb.hook('data/set', { collection: 'controls', id: live, fields: { title: 'Moved' } })).status,
    ).toBe(200);
    clock.advanceSeconds(7200 + 86_400);
    const dayAhead = await syncAll(a.graphql, streams, options);
    expect(dayAhead.streams[0]).toMatchObject({
      pass: 'full',
      counts: { read: 120, created: 0, updated: 1, deleted: 0 },
    });
    const next = await syncAll(a.graphql, streams, options);
    expect(next.streams[0]).toMatchObject({ pass: 'incremental', counts: { updated: 0 } });
    await a.cleanup();
  });

  it('a pass reads its snapshot again at its end: replaced in between, the stream fails and deletes nothing; the next run does', async () => {
    const a = await accessFixture(sb);
    const files = new FileSyncStateStore(join(dir, 'state'));
    const options = { tenant: sb.tenant, state: files, sink: new DirectorySink(join(dir, 'out')) };
    const streams = resolveStreams({ select: ['controls'] });
    await syncAll(a.graphql, streams, options);
    const mutated = (await sb.hook('data/mutate', { collection: 'controls', deletes: 2 })).body as {
      deleted: string[];
    };
    // A store whose snapshot is another one when the pass reads it the second time (as if another writer had
    // stored one meanwhile): its last byte differs.
    let reads = 0;
    const swapping = Object.assign(Object.create(files) as FileSyncStateStore, {
      async readSnapshot(tenant: string, stream: string) {
        const chunks = await files.readSnapshot(tenant, stream);
        if (++reads < 2 || !chunks) return chunks;
        const other = await bytesOf(chunks);
        other[other.length - 1] ^= 1;
        return (async function* () {
          yield other;
        })();
      },
    });
    const swapped = await syncAll(a.graphql, streams, { ...options, state: swapping, fullPass: true });
    expect(reads).toBe(2);
    expect(swapped.streams[0]).toMatchObject({ ok: false, errorCode: 'storage_unavailable' });
    expect(swapped.streams[0].error).toContain('the stored snapshot of controls changed while the pass ran');
    expect((await delivered(swapped.runId, 'controls')).filter((c) => c.kind === 'deleted')).toEqual([]);
    // With the store as it is, the next run completes the pass and reports both deletions, once.
    const next = await syncAll(a.graphql, streams, { ...options, fullPass: true });
    expect(next.streams[0]).toMatchObject({ ok: true, counts: { read: 118, deleted: 2 } });
    expect(
      (await delivered(next.runId, 'controls'))
        .filter((c) => c.kind === 'deleted')
        .map((c) => c.id)
        .sort(),
    ).toEqual([...mutated.deleted].sort());
    await a.cleanup();
  });

  it('a full pass that sees every stored record again does not read the snapshot a second time, and stores it whole', async () => {
    const a = await accessFixture(sb);
    const files = new FileSyncStateStore(join(dir, 'state'));
    let reads = 0;
    const counting = Object.assign(Object.create(files) as FileSyncStateStore, {
      async readSnapshot(tenant: string, stream: string) {
        reads++;
        return files.readSnapshot(tenant, stream);
      },
    });
    const options = { tenant: sb.tenant, state: counting, sink: new DirectorySink(join(dir, 'out')) };
    const streams = resolveStreams({ select: ['controls'] });
    await syncAll(a.graphql, streams, options);
    expect((await sb.hook('data/mutate', { collection: 'controls', updates: 3 })).status).toBe(200);
    reads = 0;
    const full = await syncAll(a.graphql, streams, { ...options, fullPass: true });
    expect(full.streams[0]).toMatchObject({
      ok: true,
      pass: 'full',
      counts: { read: 120, updated: 3, unchanged: 117, deleted: 0 },
    });
    expect(reads).toBe(1);
    // What it stored holds every record: a deletion now is found, and nothing else is a change.
    const mutated = (await sb.hook('data/mutate', { collection: 'controls', deletes: 1 })).body as {
      deleted: string[];
    };
    reads = 0;
    const next = await syncAll(a.graphql, streams, { ...options, fullPass: true });
    expect(next.streams[0]).toMatchObject({
      ok: true,
      counts: { read: 119, created: 0, updated: 0, unchanged: 119, deleted: 1 },
    });
    expect(reads).toBe(2);
    expect((await delivered(next.runId, 'controls')).map((c) => [c.kind, c.id])).toEqual([
      ['deleted', mutated.deleted[0]],
    ]);
    await a.cleanup();
  });

  it('a truncated stored snapshot fails the stream, delivers nothing and names the fix; `--full` starts it over', async () => {
    const a = await accessFixture(sb);
    const state = new FileSyncStateStore(join(dir, 'state'));
    const options = { tenant: sb.tenant, state, sink: new DirectorySink(join(dir, 'out')) };
    const streams = resolveStreams({ select: ['controls'] });
    await syncAll(a.graphql, streams, options);
    const file = join(dir, 'state', encodeURIComponent(sb.tenant), 'controls.snapshot');
    const bytes = await readFile(file);
    await writeFile(file, bytes.subarray(0, bytes.length - 3));
    expect((await sb.hook('data/mutate', { collection: 'controls', deletes: 1 })).status).toBe(200);
    const failed = await syncAll(a.graphql, streams, { ...options, fullPass: true });
    expect(failed.streams[0]).toMatchObject({ ok: false, errorCode: 'state_damaged' });
    expect(failed.streams[0].error).toContain('the stored snapshot of controls is truncated');
    expect(failed.streams[0].error).toContain('tenant-integrations sync --full');
    expect(await delivered(failed.runId, 'controls')).toEqual([]);
    // Started over, the stream is whole again: every record a change, once.
    const over = await syncAll(a.graphql, streams, { ...options, full: true });
    expect(over.streams[0]).toMatchObject({ ok: true, counts: { read: 119, created: 119, deleted: 0 } });
    await a.cleanup();
  });

  it('a snapshot written from chunks its source reuses is stored as they were when given, in either store', async () => {
    // What a pass keeps comes as views of the one buffer the previous snapshot is read into (shared/sync/file-state.ts):
    // each chunk is valid until the next is asked for. Small chunks, one past the file store's 1 MiB gathering, and
    // one that does not fit beside what is gathered.
    const sizes = [3_000, 700, 1_200_000, 5, 900_000, 300_000, 17];
    const reused = Buffer.alloc(Math.max(...sizes));
    const expected = Buffer.concat(sizes.map((n, i) => Buffer.alloc(n, i + 1)));
    async function* source() {
      for (const [i, n] of sizes.entries()) {
        reused.fill(i + 1, 0, n);
        yield reused.subarray(0, n);
        reused.fill(0xee); // the source moves on: what was given must already be taken
      }
    }
    const files = new FileSyncStateStore(join(dir, 'state'));
    await files.writeSnapshot('t', 's', source());
    expect((await bytesOf(await files.readSnapshot('t', 's'))).equals(expected)).toBe(true);
    const azurite = await startAzurite();
    try {
      const blobs = new BlobSyncStateStore(BlobServiceClient.fromConnectionString(azurite.connectionString));
      await blobs.writeSnapshot('t', 's', source());
      expect((await bytesOf(await blobs.readSnapshot('t', 's'))).equals(expected)).toBe(true);
    } finally {
      await azurite.stop();
    }
  });

  it('a snapshot of many blocks is stored whole in Blob Storage, though its blocks’ buffers are filled again', async () => {
    // The blob store stages a snapshot in 4 MiB blocks and fills a staged block's buffer with a later block
    // (shared/sync/file-state.ts): 18 MiB of 512 KiB chunks, each its own byte, from a source that reuses one buffer.
    const chunks = 36;
    const size = 512 * 1024;
    const reused = Buffer.alloc(size);
    async function* source() {
      for (let i = 0; i < chunks; i++) {
        reused.fill(i + 1);
        yield reused;
        reused.fill(0xee);
      }
    }
    const azurite = await startAzurite();
    try {
      const blobs = new BlobSyncStateStore(BlobServiceClient.fromConnectionString(azurite.connectionString));
      await blobs.writeSnapshot('t', 's', source());
      const stored = await bytesOf(await blobs.readSnapshot('t', 's'));
      expect(stored.length).toBe(chunks * size);
      // Each chunk's bytes where it was written: a buffer filled again before its block was stored would show here.
      const wrong = Array.from({ length: chunks }, (_, i) => i).filter(
        (i) => !stored.subarray(i * size, (i + 1) * size).equals(Buffer.alloc(size, i + 1)),
      );
      expect(wrong).toEqual([]);
    } finally {
      await azurite.stop();
    }
  });

  it('a sink failure mid-stream fails that stream and deletes nothing; the next run resumes after the last delivered page', async () => {
    const a = await accessFixture(sb);
    const state = new FileSyncStateStore(join(dir, 'state'));
    const [controls] = resolveStreams({ select: ['controls'] });
    await syncAll(a.graphql, [controls], {
      tenant: sb.tenant,
      state,
      sink: new DirectorySink(join(dir, 'base')),
    });
    await sb.hook('data/mutate', { collection: 'controls', creates: 0, updates: 100, deletes: 5 });
    const { sink: flaky, seen } = failingAt(2, new DirectorySink(join(dir, 'out')));
    // A full pass (deletions are what this test is about); the resumed run keeps it.
    const failed = await syncAll(a.graphql, [controls], {
      tenant: sb.tenant,
      state,
      sink: flaky,
      fullPass: true,
    });
    expect(failed.ok).toBe(false);
    expect(failed.streams[0].error).toContain('downstream unavailable');
    expect(seen.some((c) => c.kind === 'deleted')).toBe(false);
    const retry = await syncAll(a.graphql, [controls], {
      tenant: sb.tenant,
      state,
      sink: new DirectorySink(join(dir, 'out')),
    });
    expect(retry.streams[0].counts).toEqual({
      read: 115,
      created: 0,
      updated: 100,
      deleted: 5,
      unchanged: 15,
    });
    // The retry resumes the same run after the last page delivered: nothing twice, nothing lost.
    expect(retry).toMatchObject({ runId: failed.runId, resumed: true, ok: true });
    const all = await delivered(retry.runId, 'controls');
    expect(all.slice(0, seen.length)).toEqual(seen);
    expect(new Set(all.map((c) => c.changeId)).size).toBe(all.length);
    expect(all.filter((c) => c.kind === 'updated')).toHaveLength(100);
    expect(all.filter((c) => c.kind === 'deleted')).toHaveLength(5);
    await a.cleanup();
  });

  it('a checkpoint log past its blob’s block limit goes on in the next blob: a run stopped there resumes in another process, nothing twice, and the next run finds nothing new', async () => {
    const azurite = await startAzurite();
    const a = await accessFixture(sb);
    try {
      const service = BlobServiceClient.fromConnectionString(azurite.connectionString);
      // Three blocks a blob instead of Blob Storage's 50 000: twelve pages of ten make a log of five blobs.
      const store = () => new BlobSyncStateStore(service, { blocksPerSegment: 3 });
      const [builtIn] = resolveStreams({ select: ['controls'] });
      const controls = { ...builtIn, pageSize: 10 };
      const segments = async () => {
        const names: string[] = [];
        for await (const b of service
          .getContainerClient('sync-state')
          .listBlobsFlat({ prefix: `${sb.tenant}/controls.checkpoint` }))
          names.push(b.name);
        return names;
      };
      const out = new DirectorySink(join(dir, 'out'));
      const { sink: flaky, seen } = failingAt(8, out);
      const failed = await syncAll(a.graphql, [controls], { tenant: sb.tenant, state: store(), sink: flaky });
      expect(failed.ok).toBe(false);
      expect(seen).toHaveLength(70);
      // The start record and seven pages: three blobs.
      expect(await segments()).toEqual([
        `${sb.tenant}/controls.checkpoint`,
        `${sb.tenant}/controls.checkpoint.1`,
        `${sb.tenant}/controls.checkpoint.2`,
      ]);
      // Another process (a new store knows nothing of the blobs) resumes after the last delivered page.
      const retry = await syncAll(a.graphql, [controls], { tenant: sb.tenant, state: store(), sink: out });
      expect(retry).toMatchObject({ runId: failed.runId, resumed: true, ok: true });
      const all = await delivered(retry.runId, 'controls');
      expect(all.slice(0, seen.length)).toEqual(seen);
      expect(all.filter((c) => c.kind === 'created')).toHaveLength(120);
      expect(new Set(all.map((c) => c.id)).size).toBe(120);
      // A complete run clears every blob of its log; the snapshot it stored (read back from all of them) is whole.
      expect(await segments()).toEqual([]);
      const again = await syncAll(a.graphql, [controls], {
        tenant: sb.tenant,
        state: store(),
        sink: out,
        fullPass: true,
      });
      expect(again.streams[0].counts).toMatchObject({ read: 120, created: 0, updated: 0, deleted: 0 });
    } finally {
      await a.cleanup();
      await azurite.stop();
    }
  });

  it('through the traced sink the host uses, a page a sink holds is checkpointed only once the sink has stored it', async () => {
    const a = await accessFixture(sb);
    const [controls] = resolveStreams({ select: ['controls'] });
    // Holds every page written with `hold` until flushed, as postgres does with a group that is not full.
    let storedThrough = 0;
    let heldThrough = 0;
    const holding: GroupingSink = {
      groups: true,
      description: 'holding',
      names: () => [],
      ownNames: [],
      erase: async () => ({ erased: [] }),
      write: async (batch, options) => {
        if (!options?.hold) throw new Error('every page of a pass is written with hold');
        heldThrough = batch.page;
        return { rejected: 0, held: true };
      },
      flush: async () => {
        storedThrough = heldThrough;
      },
      drop: () => undefined,
      endStream: async () => undefined,
      finish: async () => undefined,
      close: async () => undefined,
    };
    // After each checkpoint append: the last page the log names against what the sink has stored by then.
    const inner = new FileSyncStateStore(join(dir, 'state'));
    const appended: Array<{ checkpointed: number; stored: number }> = [];
    const state = Object.assign(Object.create(inner) as FileSyncStateStore, {
      appendCheckpoint: async (...args: Parameters<FileSyncStateStore['appendCheckpoint']>) => {
        await inner.appendCheckpoint(...args);
        const log = await inner.readCheckpoint(args[0], args[1]);
        const cp = log && (await decodeCheckpoint(log));
        appended.push({ checkpointed: cp?.page ?? 0, stored: storedThrough });
      },
    });
    const result = await syncAll(a.graphql, [controls], {
      tenant: sb.tenant,
      state,
      sink: tracedSink(holding),
    });
    expect(result.ok).toBe(true);
    expect(storedThrough).toBeGreaterThan(1);
    expect(appended.filter((x) => x.checkpointed > x.stored)).toEqual([]);
    expect(Math.max(...appended.map((x) => x.checkpointed))).toBe(storedThrough);
    await a.cleanup();
  });

  it('a GraphQL error that will not go away fails the stream cleanly; the other streams finish', async () => {
    const a = await accessFixture(sb);
    await sb.hook('faults', { route: 'graphql', status: 400, count: 1 });
    const result = await syncAll(a.graphql, resolveStreams({ select: ['controls', 'users'] }), {
      tenant: sb.tenant,
      state: new FileSyncStateStore(join(dir, 'state')),
      sink: new DirectorySink(join(dir, 'out')),
      concurrency: 1,
    });
    expect(result.ok).toBe(false);
    expect(result.streams.map((s) => s.ok)).toEqual([false, true]);
    expect((await readdir(join(dir, 'state', sb.tenant))).filter((f) => f.endsWith('.snapshot'))).toEqual([
      'users.snapshot',
    ]);
    await a.cleanup();
  });
});

describe('tenant-integrations sync', () => {
  const env = () => ({
    ...sb.settings,
    LOCAL_SECRETS_FILE: join(dir, 'secrets.json'),
  });

  it('--json prints per-stream counts; a second run finds nothing new', async () => {
    await new LocalFileSecretStore(join(dir, 'secrets.json')).set('tenant-client-secret', sb.clientSecret);
    const first = await runCli(
      ['sync', '--streams', 'kpis,users', '--sink', `dir:${join(dir, 'out')}`, '--json'],
      { env: env() },
    );
    expect(first.code).toBe(0);
    const summary = JSON.parse(first.stdout);
    expect(summary).toMatchObject({
      ok: true,
      streams: { kpis: { read: 120, created: 120 }, users: { created: 120 } },
    });
    const second = JSON.parse(
      (
        await runCli(['sync', '--streams', 'kpis', '--sink', `dir:${join(dir, 'out')}`, '--json'], {
          env: env(),
        })
      ).stdout,
    );
    expect(second.streams.kpis).toMatchObject({ pass: 'incremental', created: 0, updated: 0, deleted: 0 });
    const full = JSON.parse(
      (
        await runCli(
          ['sync', '--streams', 'kpis', '--full-pass', '--sink', `dir:${join(dir, 'out')}`, '--json'],
          { env: env() },
        )
      ).stdout,
    );
    expect(full.streams.kpis).toEqual({
      pass: 'full',
      read: 120,
      created: 0,
      updated: 0,
      deleted: 0,
      unchanged: 120,
    });
    // Read by a person: each line says which kind of pass its stream had.
    const sink = ['--sink', `dir:${join(dir, 'out')}`];
    const fullAgain = await runCli(['sync', '--streams', 'kpis', '--full-pass', ...sink], { env: env() });
    expect(fullAgain.stderr).toContain('✔ kpis (full pass): 120 read, 0 created');
    const tick = await runCli(['sync', '--streams', 'kpis', ...sink], { env: env() });
    expect(tick.stderr).toMatch(/✔ kpis \(incremental\): \d+ read, 0 created/);
    expect(first.stderr + first.stdout).not.toContain(sb.clientSecret);
  });

  it('a sync runs with the memory flags of cli/node-flags.ts, in one process; an operator’s own values win', async () => {
    await new LocalFileSecretStore(join(dir, 'secrets.json')).set('tenant-client-secret', sb.clientSecret);
    // Preloaded into the command: what it ran with, and whether it is the process that was started.
    const hook = join(dir, 'flags.js');
    await writeFile(
      hook,
      "process.on('exit', () => process.stderr.write('FLAGS ' + JSON.stringify([process.execArgv, require('v8').getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size]) + '\\n'));",
    );
    const flagsOf = (stderr: string) =>
      stderr
        .split('\n')
        .filter((l) => l.startsWith('FLAGS '))
        .map((l) => JSON.parse(l.slice(6)) as [string[], number]);
    const sync = ['sync', '--streams', 'kpis', '--sink', `dir:${join(dir, 'out')}`];
    const r = await runCli(sync, { env: { ...env(), NODE_OPTIONS: `--require ${hook}` } });
    expect(r.code).toBe(0);
    const [[execArgv, newSpace]] = flagsOf(r.stderr);
    expect(flagsOf(r.stderr)).toHaveLength(1); // the command replaced the launcher: no second process
    expect(execArgv).toEqual(['--max-semi-space-size=4', '--heap-growing-percent=10']);
    expect(newSpace).toBeLessThanOrEqual(8 * 1024 * 1024);
    // The operator's own values: V8's flags on the command line (NODE_OPTIONS refuses --heap-growing-percent).
    const own = await runCli(sync, {
      nodeArgs: ['--heap-growing-percent=0'],
      env: { ...env(), NODE_OPTIONS: `--require ${hook} --max-semi-space-size=16` },
    });
    expect(own.code).toBe(0);
    expect(flagsOf(own.stderr)).toEqual([[['--heap-growing-percent=0'], expect.any(Number)]]);
    // One of them set: the other is still added, and the operator's flags are kept.
    const one = await runCli(sync, {
      nodeArgs: ['--stack-trace-limit=20'],
      env: { ...env(), NODE_OPTIONS: `--require ${hook} --max-semi-space-size=16` },
    });
    expect(flagsOf(one.stderr)).toEqual([
      [['--stack-trace-limit=20', '--heap-growing-percent=10'], expect.any(Number)],
    ]);
    const help = await runCli(['sync', '--help'], { env: { ...env(), NODE_OPTIONS: `--require ${hook}` } });
    expect(flagsOf(help.stderr)[0][0]).toEqual([]);
  });

  it('an unknown stream is a usage mistake naming the known ones (exit 2)', async () => {
    await new LocalFileSecretStore(join(dir, 'secrets.json')).set('tenant-client-secret', sb.clientSecret);
    const r = await runCli(['sync', '--streams', 'nope'], { env: env() });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('known: controls, evidence, personnel, kpis, reports, users');
    // Named as the person gave it: the option, not the setting they did not set.
    expect(r.stderr).toContain('--streams: unknown stream nope');
    expect(r.stderr).not.toContain('SYNC_STREAMS');
  });
});
