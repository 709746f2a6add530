import type { StreamDefinition } from '../../shared/streams';
import { runCli } from '../helpers/cli';
import { cliTenant } from '../helpers/cli-tenant';
import { startGrapheneTenant, type GrapheneTenant } from '../helpers/graphene';

/**
 * Graphene-Django with django-filter, its defaults untouched (Relay global ids, `first` capped at 100,
 * django-filter's lookups as `updatedAt_Gt`/`updatedAt_Gte`, an OrderingFilter as `orderBy: "-updated_at"`, choices as
 * enums, decimals as strings): discovery finds "changed since" in Graphene's own words, proves it against the server,
 * and after 3 of 14 000 inspections change, a sync reads a few of them and delivers exactly the 3. Through the CLI.
 */
jest.setTimeout(600_000);

const t = cliTenant('ti-graphene-');
const { env, sync, delivered } = t;

let tenant: GrapheneTenant;
beforeAll(async () => {
  tenant = await startGrapheneTenant({ inspections: 14_000 });
  t.settings = tenant.settings;
  t.clientSecret = tenant.sb.clientSecret;
}, 300_000);
afterAll(() => tenant?.stop());

describe('a Graphene-Django tenant with its defaults', () => {
  it('discover proves updatedAt_Gte; a sync after 3 of 14 000 changed reads under 10 % and delivers exactly the 3', async () => {
    const r = await runCli(['discover', '--json'], { env: env() });
    expect(r.code).toBe(0);
    const found = JSON.parse(r.stdout) as {
      streams: StreamDefinition[];
      proposals: Array<{ stream: string; incremental?: string }>;
    };
    const by = Object.fromEntries(found.streams.map((s) => [s.name, s]));
    expect(by.allInspections.incremental).toEqual({ variable: 'updatedAt_Gte', field: 'updatedAt' });
    expect(found.proposals.find((p) => p.stream === 'allInspections')?.incremental).toMatch(
      /^updatedAt_Gte: \$since — proved: a read from .* returned only records at or after it/,
    );
    // An inspector's inspections are to-many: read as their own stream, not inside each inspector.
    expect(by.allInspectors.document).not.toContain('inspections');

    const first = await sync();
    expect([first.code, first.summary.ok]).toEqual([0, true]);
    expect(first.summary.streams.allInspections).toMatchObject({ created: 14_000, read: 14_000 });
    const all = await delivered(first.summary.runId, 'allInspections');
    expect(new Set(all.map((c) => c.id)).size).toBe(14_000);

    await tenant.change([7, 7_000, 13_999]);
    const second = await sync();
    expect([second.code, second.summary.ok]).toEqual([0, true]);
    const s = second.summary.streams.allInspections;
    expect(s).toMatchObject({ pass: 'incremental', updated: 3, created: 0, deleted: 0 });
    expect(s.read).toBeLessThanOrEqual(1_400);
    // The figure for docs/sync.md: how many of the 14 000 an incremental pass read.
    process.stderr.write(`graphene-django: incremental pass read ${s.read} of 14000\n`);
    const changes = await delivered(second.summary.runId, 'allInspections');
    const ids = changes
      .map((c) => Number(Buffer.from(String(c.id), 'base64').toString().split(':')[1]))
      .sort((a, b) => a - b);
    expect(changes.map((c) => c.kind)).toEqual(['updated', 'updated', 'updated']);
    expect(ids).toEqual([7, 7_000, 13_999]);
  });
});
