import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { startAzurite, type RunningAzurite } from '../../cli/azurite';
import { LocalFileSecretStore } from '../../shared/secrets';
import { SINKS } from '../../shared/sinks';
import { changesOf, readDelta, runAt } from '../helpers/delta';
import { startPostgres, type Postgres } from '../helpers/postgres';
import { webhookReceiver } from '../helpers/webhook-receiver';

/**
 * One contract, every sink of the registry (`SINKS`), each against its real part — Azurite for `blob`, a receiver
 * that verifies signatures for `webhook`, PostgreSQL for `postgres`, a folder for `dir` and `delta` (read back by
 * the tests' own Delta reader). What a `ChangeSink` promises the sync (shared/sinks/types.ts):
 *
 * - a page delivered twice is stored once; a stream's end delivered twice changes nothing;
 * - a run whose process died before its stream's end, resumed by a new process (the same pages again, then the end),
 *   leaves each change once;
 * - a record no store can hold as it is (a lone UTF-16 surrogate) is stored exactly, set aside and counted, or fails
 *   the page naming it — never stored altered;
 * - the places it names after a stream are told (`names`), so streams that would share one are refused first.
 *
 * A sink added to the registry without a part here fails the first test: the suite runs over every one.
 */
jest.setTimeout(240_000);

const DRIVER = resolve(__dirname, '../helpers/sink-driver.mjs');
const FIELDS = ['id', 'title', 'score', 'done', 'tags'];

interface Step {
  runId: string;
  stream: string;
  pages: unknown[][];
  /** An erasure of this key instead of pages. */
  erase?: string;
  twice?: boolean;
  end?: boolean;
  endTwice?: boolean;
  finish?: boolean;
}
interface Driven {
  ok: boolean;
  error?: string;
  code?: string;
  outcomes: Array<{
    written: Array<{ rejected?: number } | null>;
    ended: Array<{ rejected?: number } | null>;
    erased?: { erased: Array<{ place: string; count: number }>; unreachable?: string[] };
  }>;
}

const drive = (env: Record<string, string>, cwd: string, sinks: string, steps: Step[]) =>
  new Promise<Driven>((done, fail) => {
    const child = execFile(
      process.execPath,
      [DRIVER],
      { timeout: 120_000, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) =>
        err ? fail(new Error(`driver: ${stderr || err.message}`)) : done(JSON.parse(stdout)),
    );
    child.stdin?.end(
      JSON.stringify({ env, cwd, sinks, steps: steps.map((s) => ({ ...s, fields: FIELDS })) }),
    );
  });

/** What a sink holds of a run's stream: the changes it delivered (each change id as often as it is there). */
interface Part {
  entry: string;
  env: Record<string, string>;
  /**
   * The change ids of the run's stream as the sink holds them: its change log — or, for a sink that keeps only the
   * current records (`log: false`), the change each record it holds from the run came with (deletions hold none).
   */
  delivered(runId: string, stream: string): Promise<string[]>;
  log: boolean;
  /** The keys the stream's records have now, where the sink keeps the current records. */
  current?(stream: string): Promise<string[]>;
  close(): Promise<void>;
}

let dir: string;
let azurite: RunningAzurite;
let pg: Postgres;
let receiver: Awaited<ReturnType<typeof webhookReceiver>>;
let secretsFile: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ti-sink-contract-'));
  [azurite, pg, receiver] = await Promise.all([startAzurite(), startPostgres(), webhookReceiver()]);
  secretsFile = join(dir, 'secrets.json');
  await new LocalFileSecretStore(secretsFile).set('downstream-webhook-secret', receiver.secret);
});
afterAll(async () => {
  await Promise.all([azurite?.stop(), pg?.stop(), receiver?.close()]);
  rmSync(dir, { recursive: true, force: true });
});

const base = () => ({
  LOCAL_SECRETS_FILE: secretsFile,
  AzureWebJobsStorage: '',
  SYNC_REJECTED_RECORDS: 'quarantine',
});
const lines = (text: string) =>
  text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { changeId: string });

/** Each registered sink's real part. */
const PARTS: Record<string, () => Promise<Part>> = {
  dir: async () => {
    const folder = join(dir, `dir-${Math.random().toString(36).slice(2)}`);
    return {
      entry: `dir:${folder}`,
      env: base(),
      log: true,
      delivered: async (runId, stream) => {
        const file = join(folder, runId, `${stream}.ndjson`);
        return existsSync(file) ? lines(readFileSync(file, 'utf8')).map((c) => c.changeId) : [];
      },
      close: async () => undefined,
    };
  },
  blob: async () => ({
    entry: 'blob',
    env: { ...base(), AzureWebJobsStorage: azurite.connectionString },
    log: true,
    delivered: async (runId, stream) => {
      const { BlobServiceClient } = await import('@azure/storage-blob');
      const blob = BlobServiceClient.fromConnectionString(azurite.connectionString)
        .getContainerClient('sync-changes')
        .getBlockBlobClient(`acme/${runId}/${stream}.ndjson.gz`);
      if (!(await blob.exists())) return [];
      return lines(gunzipSync(await blob.downloadToBuffer()).toString('utf8')).map((c) => c.changeId);
    },
    close: async () => undefined,
  }),
  webhook: async () => ({
    entry: 'webhook',
    env: { ...base(), DOWNSTREAM_WEBHOOK_URL: receiver.url, AZURE_FUNCTIONS_ENVIRONMENT: 'Development' },
    log: true,
    // A receiver keeps a message once by its `webhook-id` (Standard Webhooks): what it holds of the run's stream.
    delivered: async (runId, stream) => {
      const seen = new Map<string, string[]>();
      for (const m of receiver.received)
        if (m.type === 'sync.changes' && m.data.runId === runId && m.data.stream === stream)
          seen.set(
            m.id,
            (m.data.changes as Array<{ changeId: string }>).map((c) => c.changeId),
          );
      return [...seen.values()].flat();
    },
    close: async () => undefined,
  }),
  postgres: async () => {
    const schema = `contract_${Math.random().toString(36).slice(2, 8)}`;
    return {
      entry: 'postgres',
      env: { ...base(), POSTGRES_URL: pg.url, POSTGRES_SCHEMA: schema },
      log: false,
      delivered: async (runId, stream) => {
        // Each page applied once is one checkpoint row (its key is the page): a page stored twice is refused there.
        const rows = await pg.query<{ content_hash: string }>(
          `SELECT content_hash FROM "${schema}"."${stream}" WHERE run_id = $1 AND deleted_at IS NULL`,
          [runId],
        );
        return rows.map((r) => r.content_hash);
      },
      current: async (stream) =>
        (
          await pg.query<{ id: string }>(
            `SELECT id FROM "${schema}"."${stream}" WHERE deleted_at IS NULL ORDER BY id`,
          )
        ).map((r) => r.id),
      close: async () => undefined,
    };
  },
  delta: async () => {
    const folder = join(dir, `delta-${Math.random().toString(36).slice(2)}`);
    return {
      entry: `delta:${folder}`,
      env: base(),
      log: true,
      delivered: async (runId, stream) => {
        if (!existsSync(join(folder, `${stream}_changes`))) return [];
        const t = await readDelta(join(folder, `${stream}_changes`));
        return t.rows.filter((r) => r.run_id === runId).map((r) => String(r.change_id));
      },
      current: async (stream) => (await readDelta(join(folder, stream))).rows.map((r) => String(r._key)),
      close: async () => undefined,
    };
  },
};

const created = changesOf('created', 0, 40);
const run1 = runAt('2026-11-28T09:00:00.000Z');
const run2 = runAt('2026-11-28T10:00:00.000Z');
const idsOf = (changes: Array<{ changeId: string }>) => changes.map((c) => c.changeId).sort();

describe('the sink contract, over every sink of the registry', () => {
  it('every registered sink has its real part here', () => {
    expect(SINKS.map((s) => s.kind).filter((k) => !PARTS[k])).toEqual([]);
  });

  describe.each(SINKS.map((s) => s.kind))('%s', (kind) => {
    let part: Part;
    beforeAll(async () => {
      part = await PARTS[kind]();
    });
    afterAll(() => part?.close());

    it('a page delivered twice and a stream’s end delivered twice leave each change once', async () => {
      const done = await drive(part.env, dir, part.entry, [
        {
          runId: run1,
          stream: 'items',
          pages: [created.slice(0, 20), created.slice(20)],
          twice: true,
          endTwice: true,
          finish: true,
        },
      ]);
      expect(done).toMatchObject({ ok: true });
      expect((await part.delivered(run1, 'items')).sort()).toEqual(idsOf(created));
      if (part.current) expect(await part.current('items')).toEqual(created.map((c) => c.id).sort());
    });

    it('a run whose process died before its stream’s end, resumed by another, leaves each change once', async () => {
      const updated = changesOf('updated', 0, 5, { title: 'changed' });
      const deleted = changesOf('deleted', 30, 32);
      const done = await drive(part.env, dir, part.entry, [
        { runId: run2, stream: 'items', pages: [updated] }, // died here: no end
        { runId: run2, stream: 'items', pages: [updated, deleted], end: true, finish: true },
      ]);
      expect(done).toMatchObject({ ok: true });
      expect((await part.delivered(run2, 'items')).sort()).toEqual(
        idsOf(part.log ? [...updated, ...deleted] : updated),
      );
      if (part.current)
        expect(await part.current('items')).toEqual(
          created
            .map((c) => c.id)
            .filter((id) => !deleted.some((d) => d.id === id))
            .sort(),
        );
    });

    it('a record no store can hold as it is is stored exactly, or set aside and counted — never altered', async () => {
      const lone = [
        { kind: 'created', id: 'r9000', changeId: 'lone-1', record: { id: 'r9000', title: 'a\ud800b' } },
      ];
      const runId = runAt('2026-11-28T11:00:00.000Z');
      const done = await drive(part.env, dir, part.entry, [
        { runId, stream: 'odd', pages: [lone], end: true },
      ]);
      expect(done).toMatchObject({ ok: true });
      const rejected = Math.max(
        0,
        ...done.outcomes.flatMap((o) => [...o.written, ...o.ended]).map((x) => x?.rejected ?? 0),
      );
      const delivered = await part.delivered(runId, 'odd');
      // Either set aside and counted, and not stored; or stored (as JSON, the surrogate escaped: exactly).
      expect([kind, rejected > 0 ? delivered.length === 0 : delivered.length === 1]).toEqual([kind, true]);
    });

    it('erase: the key’s current row and every change of it leave every run it kept; again finds nothing', async () => {
      // r0002: created in run 1, updated in run 2 — two changes, one current row.
      const key = 'r0002';
      const changeIds = [created[2].changeId, changesOf('updated', 2, 3, { title: 'changed' })[0].changeId];
      const first = await drive(part.env, dir, part.entry, [
        { runId: run1, stream: 'items', pages: [], erase: key },
      ]);
      expect(first).toMatchObject({ ok: true });
      const outcome = first.outcomes[0].erased;
      if (kind === 'webhook') {
        // What went to a receiver is the receiver's: said, never claimed erased.
        expect(outcome).toEqual({
          erased: [],
          unreachable: [expect.stringMatching(/erase the record there/)],
        });
        return;
      }
      const removed = outcome?.erased.reduce((n, e) => n + e.count, 0);
      // Its two changes where the sink keeps them, and its current row where it keeps those.
      expect([kind, removed]).toEqual([kind, (part.log ? 2 : 0) + (part.current ? 1 : 0)]);
      const held = [...(await part.delivered(run1, 'items')), ...(await part.delivered(run2, 'items'))];
      expect(held.filter((id) => changeIds.includes(id))).toEqual([]);
      // Every other change is still there, once.
      expect(held.length).toBeGreaterThan(30);
      if (part.current) expect(await part.current('items')).not.toContain(key);
      const again = await drive(part.env, dir, part.entry, [
        { runId: run1, stream: 'items', pages: [], erase: key },
      ]);
      expect(again.outcomes[0].erased).toEqual({ erased: [] });
    });

    it('names the places it makes of a stream, so streams that would share one are refused before anything is written', async () => {
      const { nameCollisions } = await import('../../shared/sinks/names');
      const { sinksFor } = await import('../../shared/sinks');
      const { loadConfig } = await import('../../shared/app');
      const config = loadConfig({ ...part.env, SYNC_SINKS: part.entry });
      const sink = sinksFor(part.entry, { config, secrets: { get: async () => 'secret' }, cwd: dir });
      const collisions = nameCollisions(sink, ['Orders', 'orders']);
      expect([kind, collisions.length > 0]).toEqual([kind, sink.names('orders').length > 0]);
      await sink.close();
    });
  });
});
