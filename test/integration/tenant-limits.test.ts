import { join } from 'node:path';
import { discover } from '../../shared/catalog';
import { withPersonalPolicy } from '../../shared/catalog/personal';
import { OffsetClock } from '../../shared/clock';
import { DirectorySink, type ChangeSink } from '../../shared/sinks';
import { FileSyncStateStore } from '../../shared/sync/file-state';
import { syncAll } from '../../shared/sync/run-steps';
import { accessFixture } from '../helpers/access';
import { runCli } from '../helpers/cli';
import { cliSandbox } from '../helpers/cli-sandbox';

/**
 * First contact with a tenant that enforces limits it never announced (the seed: "not shown"): the sandbox refuses a
 * query that costs more than 400 (a page's selection times its size) and more than 8 requests a second per
 * credential, with 429, Retry-After and RateLimit-* headers. A first sync with no streams file, through the CLI an
 * operator runs, on the `varied` schema (six collections paged six ways).
 */

jest.setTimeout(180_000);

const RECORDS = 120;
const STREAMS = ['controlList', 'evidenceItems', 'staff', 'metrics', 'reportFeed', 'accounts'];
const t = cliSandbox(
  { records: RECORDS, schema: 'varied', limits: { complexity: 400, rate: 8 } },
  'ti-limits-',
);

const stats = async () =>
  (await t.sb.hook('stats')).body as { graphql: { rateLimited: number; tooComplex: number } };

const { sync, delivered } = t;

describe('limits the tenant never announced', () => {
  it('a first sync with no streams file delivers every record once, lowers the page size the ceiling refuses, keeps it, and stays under the rate', async () => {
    const first = await sync();
    expect(first.code).toBe(0);
    const after1 = await stats();
    for (const name of STREAMS) {
      expect(first.summary.streams[name]).toMatchObject({ read: RECORDS, created: RECORDS });
      const ids = (await delivered(first.summary.runId, name)).map((c) => c.id);
      expect(ids).toHaveLength(RECORDS);
      expect(new Set(ids).size).toBe(RECORDS);
    }
    // Some pages were refused as too costly and asked again smaller: the run says which, and to what size.
    expect(after1.graphql.tooComplex).toBeGreaterThan(0);
    const lowered = Object.entries(first.summary.streams).filter(([, s]) => s.pageSize);
    expect(lowered.length).toBeGreaterThan(0);
    for (const [, s] of lowered)
      expect(s.pageSize).toEqual({ size: expect.any(Number), limit: 'the tenant’s complexity ceiling' });
    // A handful of 429s at most (31 in 206 requests before the pacer, issue 56).
    expect(after1.graphql.rateLimited).toBeLessThanOrEqual(5);

    // The next run starts at the sizes learnt: not one page refused again, nothing new; still said, to a person too.
    const second = await sync();
    expect(second.code).toBe(0);
    for (const [name, s] of lowered)
      expect(second.summary.streams[name]).toMatchObject({
        created: 0,
        updated: 0,
        deleted: 0,
        pageSize: s.pageSize,
      });
    const third = await runCli(['sync', '--sink', `dir:${join(t.dir, 'out')}`], {
      env: t.env(),
    });
    expect(third.code).toBe(0);
    for (const [name, s] of lowered)
      expect(third.stderr).toContain(
        `ℹ ${name}: page size lowered to ${s.pageSize?.size}: the tenant’s complexity ceiling`,
      );
    const after = await stats();
    expect(after.graphql.tooComplex).toBe(after1.graphql.tooComplex);
    expect(after.graphql.rateLimited - after1.graphql.rateLimited).toBeLessThanOrEqual(5);
  });

  it('a ceiling not even one record fits under fails those streams, naming the limit; the others finish', async () => {
    expect((await sync()).code).toBe(0); // the catalog, discovered and stored
    await t.sb.hook('limits', { complexity: 10, rate: null });
    const r = await sync();
    expect(r.code).toBe(1);
    const failed = Object.values(r.summary.streams).filter((s) => s.error);
    expect(failed.length).toBeGreaterThan(0);
    for (const s of failed)
      expect(s.error).toMatch(
        /the tenant refuses (a page of 1 record|its one answer) \(Query has complexity \d+, which exceeds the maximum of 10/,
      );
    // `metrics` is one answer of a few fields: it fits, and its stream finishes.
    expect(r.summary.streams.metrics).toMatchObject({ read: RECORDS });
    expect(r.summary.streams.metrics.error).toBeUndefined();
  });

  it('numbered pages lowered on the first page: a pass that dies part-way resumes at the lowered size, every record once', async () => {
    await t.sb.hook('limits', { complexity: 100, rate: null });
    const a = await accessFixture(t.sb);
    try {
      // As a run reads it: its personal fields kept (this is about page sizes), as the catalog resolves them.
      const [staff] = withPersonalPolicy(
        (await discover(a.graphql)).streams.filter((p) => p.stream.name === 'staff').map((p) => p.stream),
        'keep',
      );
      expect(staff?.pagination).toBe('page');
      const out = new DirectorySink(join(t.dir, 'out'));
      // The sink fails at its third page: two pages of the lowered size were delivered and checkpointed.
      let writes = 0;
      const flaky: ChangeSink = {
        description: 'flaky',
        names: (stream) => out.names(stream),
        ownNames: [],
        write: async (batch) => {
          if (++writes === 3) throw new Error('downstream unavailable');
          await out.write(batch);
        },
        endStream: (...args) => out.endStream(...args),
        finish: (manifest) => out.finish(manifest),
        erase: (...args) => out.erase(...args),
        close: async () => undefined,
      };
      const ctx = { tenant: t.sb.tenant, state: new FileSyncStateStore(join(t.dir, 'state')) };
      const failed = await syncAll(a.graphql, [staff!], { ...ctx, sink: flaky });
      expect(failed.ok).toBe(false);
      const size = failed.streams[0].pageSize?.size;
      expect(size).toBeLessThan(staff!.pageSize);
      const resumed = await syncAll(a.graphql, [staff!], { ...ctx, sink: out });
      expect(resumed).toMatchObject({ runId: failed.runId, resumed: true, ok: true });
      expect(resumed.streams[0].pageSize?.size).toBe(size);
      const ids = (await delivered(resumed.runId, 'staff')).map((c) => c.id);
      expect(ids).toHaveLength(RECORDS);
      expect(new Set(ids).size).toBe(RECORDS);
    } finally {
      await a.cleanup();
    }
  });

  it('a lowered size is tried upwards a day later: a tenant that raised its limit is read at full size again', async () => {
    await t.sb.hook('limits', { complexity: 100, rate: null });
    const a = await accessFixture(t.sb);
    try {
      const [staff] = withPersonalPolicy(
        (await discover(a.graphql)).streams.filter((p) => p.stream.name === 'staff').map((p) => p.stream),
        'keep',
      );
      const clock = new OffsetClock();
      const ctx = {
        tenant: t.sb.tenant,
        state: new FileSyncStateStore(join(t.dir, 'probe-state')),
        sink: new DirectorySink(join(t.dir, 'probe-out')),
        clock,
      };
      const refused = async () => (await stats()).graphql.tooComplex;
      const first = await syncAll(a.graphql, [staff], ctx);
      const size = first.streams[0].pageSize?.size;
      expect(size).toBeLessThan(staff.pageSize);
      // The tenant raises its limit. Within the day the learnt size holds: no larger page is asked for.
      await t.sb.hook('limits', { complexity: null });
      clock.advanceSeconds(23 * 3600);
      const before = await refused();
      const same = await syncAll(a.graphql, [staff], ctx);
      expect(same.streams[0].pageSize?.size).toBe(size);
      // A day after the last refusal a pass asks with the stream's own size: read at full size, nothing refused.
      clock.advanceSeconds(2 * 3600);
      const probed = await syncAll(a.graphql, [staff], ctx);
      expect(probed.ok).toBe(true);
      expect(probed.streams[0].pageSize).toBeUndefined();
      expect(probed.streams[0].counts.read).toBe(RECORDS);
      expect(await refused()).toBe(before);
      // A tenant still at its limit a day later costs one refused request, and the size is learnt again.
      await t.sb.hook('limits', { complexity: 100 });
      clock.advanceSeconds(25 * 3600);
      const again = await syncAll(a.graphql, [staff], ctx);
      expect(again.streams[0].pageSize?.size).toBe(size);
      expect(await refused()).toBe(before + 1);
      expect(again.streams[0].counts.read).toBe(RECORDS);
    } finally {
      await a.cleanup();
    }
  });
});
