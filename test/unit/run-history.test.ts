import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileRunHistory, rowKeyOf, type RunHistory } from '../../shared/runs/history';
import { MAX_SUMMARY_CHARS, type RunSummary } from '../../shared/runs/summary';
import { detailsOf, recordedSummary } from '../../shared/runs/kind';
import { RUN_KINDS } from '../../shared/app';
import type { SyncDetails } from '../../shared/sync/run-details';
import type { ImportDetails } from '../../shared/imports/run-details';
import { statusPage } from '../../shared/admin/status-page';
import { RunRecorder } from '../../shared/runs/recorder';
import { createLogger } from '../../shared/log';

const run = (id: string, startedAt: string, kind: RunSummary['kind'] = 'sync'): RunSummary => ({
  id,
  kind,
  trigger: 'schedule',
  startedAt,
  outcome: 'succeeded',
  streams: {},
});

let dir: string;
beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'ti-runs-'))));
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('run history', () => {
  it('row keys sort newest first', () => {
    const keys = ['2026-11-20T00:00:00.000Z', '2026-11-23T10:00:00.000Z', '2026-11-22T00:00:00.000Z'].map(
      (t) => rowKeyOf({ startedAt: t, id: 'r' }),
    );
    expect([...keys].sort()).toEqual([keys[1], keys[2], keys[0]]);
  });

  it('lists newest first, by kind, and pages with `before`', async () => {
    const h = new FileRunHistory(join(dir, 'runs.json'));
    await h.record(run('a', '2026-11-21T00:00:00.000Z'));
    await h.record(run('b', '2026-11-22T00:00:00.000Z', 'export'));
    await h.record(run('c', '2026-11-23T00:00:00.000Z'));
    expect((await h.list({ limit: 10 })).map((r) => r.id)).toEqual(['c', 'b', 'a']);
    expect((await h.list({ limit: 10, kind: 'sync' })).map((r) => r.id)).toEqual(['c', 'a']);
    expect((await h.list({ limit: 10, before: '2026-11-23T00:00:00.000Z' })).map((r) => r.id)).toEqual([
      'b',
      'a',
    ]);
    // A run recorded again (running → finished) replaces its summary.
    await h.record({ ...run('c', '2026-11-23T00:00:00.000Z'), outcome: 'failed' });
    expect((await h.list({ limit: 10 })).filter((r) => r.id === 'c').map((r) => r.outcome)).toEqual([
      'failed',
    ]);
  });

  it('a summary stored with a code that is no longer ours still reads: as unexpected, its message kept', async () => {
    const path = join(dir, 'runs.json');
    // As a later version (or an older one, in upper case) might have written it.
    writeFileSync(
      path,
      JSON.stringify([
        {
          ...run('old', '2026-11-20T00:00:00.000Z'),
          outcome: 'failed',
          error: { code: 'RENAMED_LONG_AGO', message: 'it failed then' },
          streams: {
            kpis: {
              ok: false,
              read: 0,
              created: 0,
              updated: 0,
              deleted: 0,
              unchanged: 0,
              errorCode: 'CREDENTIAL_REJECTED',
            },
          },
        },
      ]),
    );
    const [read] = await new FileRunHistory(path).list({ limit: 10 });
    expect(read.error).toEqual({ code: 'unexpected', message: 'it failed then' });
    // The stream's code is the sync's own detail: read as its kind reads it.
    expect((detailsOf(RUN_KINDS.sync, read) as SyncDetails).streams.kpis.errorCode).toBe(
      'credential_rejected',
    );
  });

  it('a write-back stored with its items under `import` (before 2026-11-28) reads with them under `items`', async () => {
    const path = join(dir, 'runs.json');
    const items = {
      operation: 'updateKpi',
      total: 2,
      applied: 1,
      failed: 1,
      skipped: 0,
      pending: 0,
      failures: [],
    };
    writeFileSync(
      path,
      JSON.stringify([{ ...run('old-import', '2026-11-20T00:00:00.000Z'), kind: 'import', import: items }]),
    );
    const [read] = await new FileRunHistory(path).list({ limit: 10 });
    // The import's kind reads its details, the old name's included; recorded again, they are under `items`.
    expect((detailsOf(RUN_KINDS.import, read) as ImportDetails).items).toEqual(items);
    const again = recordedSummary(RUN_KINDS.import, read);
    expect(again).not.toHaveProperty('import');
    await new FileRunHistory(path).record(again);
    expect(JSON.parse(readFileSync(path, 'utf8'))[0]).toMatchObject({ items, kind: 'import' });
  });

  it('the recorder purges runs older than the retention, by the clock it is given', async () => {
    const h = new FileRunHistory(join(dir, 'runs.json'));
    const now = Date.parse('2026-11-23T12:00:00.000Z');
    const recorder = new RunRecorder(h, {
      logger: createLogger(() => undefined),
      clock: { now: () => now },
      retentionDays: 30,
    });
    await h.record(run('old', '2026-10-20T00:00:00.000Z'));
    await h.record(run('recent', '2026-11-01T00:00:00.000Z'));
    await recorder.save(run('new', '2026-11-23T11:00:00.000Z'));
    expect((await h.list({ limit: 10 })).map((r) => r.id)).toEqual(['new', 'recent']);
  });

  it('writing a summary never fails the run: a storage error is logged, without the summary’s content', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const broken: RunHistory = {
      record: async () => {
        throw new Error('table service unavailable\nwith a second line');
      },
      list: async () => [],
      get: async () => undefined,
      purge: async () => 0,
    };
    const recorder = new RunRecorder(broken, {
      logger: createLogger((l) => lines.push(l)),
      clock: { now: Date.now },
      retentionDays: 30,
    });
    await expect(recorder.save(run('r1', new Date().toISOString()))).resolves.toBeUndefined();
    // The summary, then the minimal one: both refused, both said (the second as an error: the run is lost).
    expect(lines).toEqual([
      { level: 'warn', message: 'run history not written', runId: 'r1', reason: 'table service unavailable' },
      {
        level: 'error',
        message: 'run history not written',
        runId: 'r1',
        reason: 'table service unavailable',
      },
    ]);
  });

  it('a summary storage refuses is replaced by the least it must say: the run still ends in the history', async () => {
    const h = new FileRunHistory(join(dir, 'runs.json'));
    let refuse = 1;
    const picky: RunHistory = {
      record: async (s) => {
        if (refuse-- > 0) throw new Error('PropertyValueTooLarge');
        return h.record(s);
      },
      list: (q) => h.list(q),
      get: (id) => h.get(id),
      purge: (d) => h.purge(d),
    };
    const recorder = new RunRecorder(picky, {
      logger: createLogger(() => undefined),
      clock: { now: Date.now },
      retentionDays: 30,
      kinds: RUN_KINDS,
    });
    const startedAt = new Date().toISOString();
    await recorder.save({
      ...run('r2', startedAt),
      finishedAt: startedAt,
      durationMs: 0,
      outcome: 'failed',
      streams: {
        users: { read: 1, created: 0, updated: 0, deleted: 0, unchanged: 0, ok: false, error: 'x' },
      },
      error: { code: 'graphql_errors', message: 'y'.repeat(5_000), action: 'Fix the query.' },
    });
    expect(await h.get('r2')).toEqual({
      id: 'r2',
      kind: 'sync',
      trigger: 'schedule',
      startedAt,
      finishedAt: startedAt,
      durationMs: 0,
      outcome: 'failed',
      error: {
        code: 'graphql_errors',
        message: expect.stringMatching(/^y+… \(\d+ more characters\)$/),
        action: 'Fix the query.',
      },
    });
    expect((await h.get('r2'))?.error?.message.length).toBeLessThanOrEqual(300);
  });

  it('bounds every error text of a summary, and drops the streams’ texts before anything else when still too long', () => {
    const streams = Object.fromEntries(
      Array.from({ length: 80 }, (_, i) => [
        `s${i}`,
        { read: 0, created: 0, updated: 0, deleted: 0, unchanged: 0, ok: false, error: 'e'.repeat(5_000) },
      ]),
    );
    // The sync's kind bounds its streams' texts (its details); every run's own fields are bounded alike.
    const b = recordedSummary(RUN_KINDS.sync, {
      ...run('r3', '2026-11-23T00:00:00.000Z'),
      outcome: 'failed',
      streams,
      error: { code: 'sink_rejected', message: 'm'.repeat(50_000), action: 'a' },
    } as RunSummary) as RunSummary & SyncDetails;
    expect(JSON.stringify(b).length).toBeLessThanOrEqual(MAX_SUMMARY_CHARS);
    expect(b.error).toMatchObject({ code: 'sink_rejected', action: 'a' });
    expect(b.error?.message.length).toBeLessThanOrEqual(2_000);
    expect(Object.keys(b.streams)).toHaveLength(80);
    expect(Object.values(b.streams).every((c) => c.error === undefined && c.ok === false)).toBe(true);
  });

  it('refuses a summary that is not one (a bad outcome), before storage', async () => {
    const h = new FileRunHistory(join(dir, 'runs.json'));
    await expect(
      h.record({ ...run('x', '2026-11-23T00:00:00.000Z'), outcome: 'exploded' as never }),
    ).rejects.toThrow(/outcome/);
  });
});

describe('status page', () => {
  it("shows each stream's pass, a lowered page size, and what the run found about the tenant's schema, escaped", () => {
    const html = statusPage({
      kinds: RUN_KINDS,
      tenant: 'acme',
      generatedAt: '2026-11-23T10:00:00.000Z',
      parts: [],
      adminHref: 'admin',
      runs: [
        {
          ...run('r1', '2026-11-23T09:00:00.000Z'),
          streams: {
            staff: {
              ok: true,
              read: 3,
              created: 0,
              updated: 3,
              deleted: 0,
              unchanged: 0,
              pass: 'incremental',
              pageSize: { size: 23, limit: 'the tenant’s complexity ceiling' },
            },
          },
          schema: {
            added: { reportFeed: ['audience', '<b>x</b>'] },
            changes: [{ stream: 'staff', added: [], removed: ['team'] }],
          },
        },
      ],
    });
    expect(html).toContain('<td>incremental</td>');
    // A page size the tenant refused, and the one the stream reads with (shared/graphql/limits.ts).
    expect(html).toContain('page size lowered to 23: the tenant’s complexity ceiling');
    expect(html).toContain(
      'the tenant has fields this stream does not read — audience, &lt;b&gt;x&lt;/b&gt;',
    );
    expect(html).toContain(
      "<strong>staff</strong>: adopted the tenant's schema changes — no longer reads team",
    );
  });
});
