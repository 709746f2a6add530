import type { StreamDefinition } from '../../shared/streams';
import { runCli } from '../helpers/cli';
import { cliTenant } from '../helpers/cli-tenant';
import { startDialectsTenant, type DialectsTenant } from '../helpers/dialects-tenant';

/**
 * Every dialect of docs/sync.md's table on one tenant, through the CLI: discovery finds each way, proves it against
 * the server and keeps the one that holds — a filter the server ignores and an ordering it does not keep are caught
 * and read whole, said — and after three of 300 records change, an incremental pass of each dialect reads a few
 * records and delivers exactly the three. AppSync's token pages are read whole though they come short; numbered pages
 * from 0 on a collection empty at discovery are decided once records come, and every record is delivered.
 */
jest.setTimeout(300_000);

const t = cliTenant('ti-dialects-');
const { env, sync, delivered } = t;

let tenant: DialectsTenant;
beforeAll(async () => {
  tenant = await startDialectsTenant();
  t.settings = tenant.settings;
  t.clientSecret = tenant.sb.clientSecret;
});
afterAll(() => tenant?.stop());

interface Discovered {
  streams: StreamDefinition[];
  proposals: Array<{ stream: string; incremental?: string }>;
}

const DIALECTS: Record<string, Partial<NonNullable<StreamDefinition['incremental']>>> = {
  allInspections: { variable: 'updatedAt_Gte' },
  inspections: { variable: 'where', kind: 'filter', value: { updatedAt: { gte: '$since' } } },
  strawberryInspections: { variable: 'filters', kind: 'filter', value: { updatedAt: { gte: '$since' } } },
  prismaInspections: { variable: 'where', kind: 'filter', value: { updatedAt: { gte: '$since' } } },
  listAppsyncInspections: { variable: 'filter', kind: 'filter', value: { updatedAt: { ge: '$since' } } },
  issues: { variable: 'filterBy', kind: 'filter', value: { since: '$since' } },
  orders: { variable: 'query', kind: 'filter', value: "updated_at:>='$since'" },
};

describe('incremental dialects, proved against the server', () => {
  let found: Discovered;

  it('discover: each dialect found and proved; the lying filter and ordering caught and read whole, said', async () => {
    const r = await runCli(['discover', '--json'], { env: env() });
    expect(r.code).toBe(0);
    found = JSON.parse(r.stdout) as Discovered;
    const by = Object.fromEntries(found.streams.map((s) => [s.name, s]));
    const said = Object.fromEntries(found.proposals.map((p) => [p.stream, p.incremental ?? '']));
    for (const [name, incremental] of Object.entries(DIALECTS)) {
      expect([name, by[name]?.incremental]).toEqual([name, expect.objectContaining(incremental)]);
      expect([name, said[name]]).toEqual([name, expect.stringContaining('proved: a read from')]);
    }
    expect(by.listAppsyncInspections.pagination).toBe('token');
    expect(by.lyingSince.incremental).toBeUndefined();
    expect(said.lyingSince).toMatch(
      /none proved.*updatedSince: \$since: it answered \d+ of \d+ records changed before/,
    );
    expect(by.lyingOrder.incremental).toBeUndefined();
    expect(said.lyingOrder).toMatch(
      /none proved.*orderBy: UPDATED_AT_DESC: the server did not keep the order/,
    );
    // Numbered pages from 0 with nothing in them yet: where they start is not decided.
    expect(by.zeroPages.paths).toMatchObject({ firstPage: 1, firstPageUnknown: true });
  });

  it('after 3 of 300 records change, every dialect reads a few and delivers exactly the 3', async () => {
    const first = await sync();
    expect([first.code, first.summary.ok]).toEqual([0, true]);
    for (const name of Object.keys(DIALECTS))
      expect([name, first.summary.streams[name].created]).toEqual([name, 300]);
    const now = Date.now();
    for (const id of [17, 150, 299]) {
      const r = tenant.data.records[id - 1];
      Object.assign(r, { title: `Changed ${id}`, updatedAt: new Date(now + id).toISOString() });
    }
    // Records the tenant gains where pages count from 0: the first page must not be lost.
    tenant.data.zero.push(...Array.from({ length: 25 }, (_, i) => ({ id: i + 1, title: `Zero ${i + 1}` })));
    const second = await sync();
    expect([second.code, second.summary.ok]).toEqual([0, true]);
    for (const name of [...Object.keys(DIALECTS), 'lyingSince', 'lyingOrder']) {
      const s = second.summary.streams[name];
      const incremental = name in DIALECTS;
      expect([name, s.updated, s.created, s.deleted]).toEqual([name, 3, 0, 0]);
      expect([name, s.pass]).toEqual([name, incremental ? 'incremental' : 'full']);
      // At most 10 % of the collection (the token pages of a filtered scan are read to their end, empty or not).
      if (incremental) expect([name, s.read <= 30]).toEqual([name, true]);
      const changes = await delivered(second.summary.runId, name);
      expect([name, changes.map((c) => [c.kind, c.id]).sort()]).toEqual([
        name,
        [
          ['updated', '150'],
          ['updated', '17'],
          ['updated', '299'],
        ],
      ]);
    }
    expect(second.summary.streams.zeroPages.created).toBe(25);
    const zero = await delivered(second.summary.runId, 'zeroPages');
    expect(new Set(zero.map((c) => c.id))).toEqual(new Set(tenant.data.zero.map((z) => String(z.id))));
  });
});
