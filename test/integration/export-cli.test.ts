import { createHash } from 'node:crypto';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PublicFile } from '../../shared/exports/reply';
import { LocalFileSecretStore } from '../../shared/secrets';
import { runCli } from '../helpers/cli';
import { readExportFile } from '../helpers/export-file';
import { sandboxFixture, type SandboxFixture } from '../helpers/sandbox';

jest.setTimeout(60_000);

let sb: SandboxFixture;
let dir: string;
beforeAll(async () => {
  sb = await sandboxFixture({ records: 130 });
});
afterAll(() => sb.close());
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ti-export-'));
  await new LocalFileSecretStore(join(dir, 'secrets.json')).set('tenant-client-secret', sb.clientSecret);
});
afterEach(() => rm(dir, { recursive: true, force: true }));

const env = () => ({
  ...sb.settings,
  LOCAL_SECRETS_FILE: join(dir, 'secrets.json'),
});

type Manifest = { files: PublicFile[] };

describe('tenant-integrations export', () => {
  it.each([
    ['ndjson', false],
    ['json', false],
    ['csv', true],
  ])(
    '%s (gzip %s): one file per stream, and a manifest whose counts, sizes and sha256 match',
    async (format, gzip) => {
      const out = join(dir, 'out');
      const r = await runCli(
        [
          'export',
          '--streams',
          'controls,users',
          '--format',
          String(format),
          ...(gzip ? ['--gzip'] : []),
          '--out',
          out,
        ],
        { env: env() },
      );
      expect(r.code).toBe(0);
      const manifest = JSON.parse(await readFile(join(out, 'manifest.json'), 'utf8')) as Manifest;
      expect(manifest.files.map((f) => f.stream)).toEqual(['controls', 'users']);
      for (const f of manifest.files) {
        const bytes = await readFile(join(out, f.file));
        expect(bytes.length).toBe(f.bytes);
        expect(createHash('sha256').update(bytes).digest('hex')).toBe(f.sha256);
        expect(f.records).toBe(130);
        const read = readExportFile(bytes, String(format), Boolean(gzip));
        expect(read.records).toBe(130);
        if (format === 'csv' && f.stream === 'controls') expect(read.header).toContain('owner.name');
      }
      // Only finished files: no partial left behind.
      expect((await readdir(out)).sort()).toEqual(
        ['manifest.json', ...manifest.files.map((f) => f.file)].sort(),
      );
    },
  );

  it('a bad format, missing --out or an unknown stream is a usage mistake (exit 2)', async () => {
    const bad = await runCli(['export', '--format', 'xml', '--out', dir], { env: env() });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('ndjson, csv, json');
    expect((await runCli(['export'], { env: env() })).code).toBe(2);
    const unknown = await runCli(['export', '--streams', 'kpis,invoices', '--out', dir], { env: env() });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('--streams: unknown stream invoices; known: controls');
  });

  it('a GraphQL failure exits 1, leaves no partial file and names the problem', async () => {
    await sb.hook('faults', { route: 'graphql', status: 400, count: 1 });
    const out = join(dir, 'out');
    const r = await runCli(['export', '--streams', 'kpis', '--out', out], { env: env() });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/refused with HTTP 400|GraphQL/);
    // The first request may be the schema read (no catalog stored yet): either way nothing is left.
    expect(await readdir(out).catch(() => [])).toEqual([]);
    expect(r.stderr).not.toContain(sb.clientSecret);
  });
});
