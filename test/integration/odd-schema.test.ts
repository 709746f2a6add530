import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runCli } from '../helpers/cli';
import { cliSandbox } from '../helpers/cli-sandbox';

/**
 * The odd corners of a schema first contact meets (`sandbox --schema odd`), through the CLI an operator runs: evidence
 * files keyed by their own `uuid` beside `maatregelId` (the control each belongs to, four files a control); records
 * whose fields fan out 400 × 400 × 400 (a 180 KB schema, 64 million leaves); a type without fields, which graphql-js
 * calls invalid and other stacks serve.
 */

jest.setTimeout(180_000);

const RECORDS = 40;
const t = cliSandbox({ records: RECORDS, schema: 'odd' }, 'ti-odd-');
const { env, delivered } = t;
const sync = (extra: Record<string, string> = {}) => t.sync([], extra);

interface Discovered {
  streams: Array<{ name: string; idPath: string; document: string }>;
  proposals: Array<{
    stream: string;
    key: string;
    fields: number;
    leftOut: Array<{ field: string; reason: string }>;
  }>;
  invalid: Array<{ code: string; type?: string; message: string }>;
}

describe('a schema with odd corners', () => {
  it('discover keys evidence by its own uuid, cuts the fan-out at its budget and names the cut, and names the invalid type', async () => {
    const r = await runCli(['discover', '--json'], { env: env() });
    expect(r.code).toBe(0);
    const found = JSON.parse(r.stdout) as Discovered;
    expect(found.streams.map((s) => s.name)).toEqual(['bewijzen', 'waaiers', 'maatregelen']);
    const proposal = (name: string) => found.proposals.find((p) => p.stream === name);
    expect(found.streams.find((s) => s.name === 'bewijzen')?.idPath).toBe('uuid');
    expect(proposal('bewijzen')?.key).toMatch(/^uuid:/);
    // 64 million leaves below one waaier: 500 selected, and what was cut is named.
    expect(proposal('waaiers')?.fields).toBe(500);
    expect(proposal('waaiers')?.leftOut).toContainEqual({
      field: 'f1',
      reason: expect.stringMatching(
        /past the selection budget of 500 fields a stream \(and the 398 fields after it\)/,
      ),
    });
    expect(proposal('maatregelen')?.leftOut).toContainEqual({
      field: 'leeg',
      reason: 'nothing in it can be selected',
    });
    expect(found.invalid).toEqual([
      { code: 'schema_invalid', type: 'Leeg', message: 'Type Leeg must define one or more fields.' },
    ]);
    const plain = await runCli(['discover'], { env: env() });
    expect(plain.stderr).toContain("The tenant's schema is invalid in 1 place");
  });

  it('a first sync with no streams file: the invalid type blocks no stream, every evidence file is delivered once', async () => {
    const first = await sync();
    expect(first.code).toBe(0);
    for (const name of ['bewijzen', 'waaiers', 'maatregelen'])
      expect(first.summary.streams[name]).toMatchObject({ read: RECORDS, created: RECORDS });
    const ids = (await delivered(first.summary.runId, 'bewijzen')).map((c) => c.id);
    expect(new Set(ids).size).toBe(RECORDS);
  });

  it('keyed by the reference, a full pass fails the stream naming the key and discover — nothing merged; a stream reading the invalid type is held back alone', async () => {
    const out = join(t.dir, 'streams.json');
    expect((await runCli(['discover', '--out', out], { env: env() })).code).toBe(0);
    const file = JSON.parse(await readFile(out, 'utf8')) as { streams: Array<Record<string, unknown>> };
    for (const s of file.streams) {
      if (s.name === 'bewijzen') s.idPath = 'maatregelId';
      if (s.name === 'maatregelen')
        s.document = String(s.document).replace(/\bnaam\b/, 'naam leeg { __typename }');
    }
    await writeFile(out, JSON.stringify(file));
    const run = await sync({ SYNC_STREAMS_FILE: out });
    expect(run.code).toBe(1);
    expect(run.summary.streams.bewijzen.error).toMatch(/two records of this pass have maatregelId "ctl-\d+"/);
    expect(run.summary.streams.bewijzen.error).toContain('tenant-integrations discover');
    expect(run.summary.streams.maatregelen.error).toMatch(
      /it reads Leeg, where the tenant's schema is invalid/,
    );
    expect(run.summary.streams.waaiers).toMatchObject({ read: RECORDS, created: RECORDS });
    expect(run.summary.streams.waaiers.error).toBeUndefined();
  });

  it('doctor, where introspection is refused, reads each stream’s first page and names a field the tenant does not know', async () => {
    const out = join(t.dir, 'streams.json');
    expect((await runCli(['discover', '--out', out], { env: env() })).code).toBe(0);
    const file = JSON.parse(await readFile(out, 'utf8')) as { streams: Array<Record<string, unknown>> };
    const bewijzen = file.streams.find((s) => s.name === 'bewijzen') as Record<string, unknown>;
    bewijzen.document = String(bewijzen.document).replace(/\btitel\b/, 'tittel');
    await writeFile(out, JSON.stringify(file));
    await t.sb.hook('schema/introspection', { enabled: false });
    const r = await runCli(['doctor', '--json'], {
      env: env({ SYNC_STREAMS_FILE: out, SYNC_SINKS: `dir:${join(t.dir, 'out')}`, AzureWebJobsStorage: '' }),
      cwd: t.dir,
    });
    const report = JSON.parse(r.stdout) as { checks: Array<{ name: string; state: string; found: string }> };
    expect(r.code).toBe(1);
    expect(report.checks.find((c) => c.name === 'stream bewijzen')).toMatchObject({
      state: 'fail',
      found: expect.stringContaining('the tenant does not know Bewijs.tittel'),
    });
    expect(report.checks.find((c) => c.name === 'stream maatregelen')?.state).toBe('ok');
  });
});
