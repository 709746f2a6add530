import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SYNC_HELP } from '../../cli/help';
import { coreSettings } from '../../shared/config';
import { APP_SETTINGS, loadConfig } from '../../shared/app';
import {
  isGrouping,
  MultiSink,
  parseSinks,
  SINKS,
  sinkModule,
  tracedSink,
  type ChangeSink,
  type GroupingSink,
} from '../../shared/sinks';

/** The sink registry: one object per sink family, and everything else reads it. */
describe('sink registry', () => {
  it('every registered sink has its kind, its entry schema, its requirements, create and doctor', () => {
    expect(SINKS.length).toBeGreaterThan(0);
    for (const sink of SINKS) {
      expect(sink.kind).toMatch(/^[a-z]+$/);
      expect(sink.usage.startsWith(sink.kind)).toBe(true);
      expect(typeof sink.argument.safeParse).toBe('function');
      expect(typeof sink.requires).toBe('function');
      expect(typeof sink.create).toBe('function');
      expect(typeof sink.doctor).toBe('function');
      expect(sinkModule(sink.kind)).toBe(sink);
    }
    expect(new Set(SINKS.map((s) => s.kind)).size).toBe(SINKS.length);
  });

  it('a sink’s settings are its own: declared with it, composed by the loader, read back under its kind', () => {
    const own = SINKS.flatMap((m) => Object.keys(m.settings?.shape ?? {}));
    expect(own).toEqual(expect.arrayContaining(['DOWNSTREAM_WEBHOOK_URL', 'POSTGRES_URL', 'POSTGRES_HOST']));
    // None of them is a core setting; every one is in the composed schema (and so in docs/configuration.md).
    expect(own.filter((name) => name in coreSettings.shape)).toEqual([]);
    expect(own.filter((name) => !(name in APP_SETTINGS.schema.shape))).toEqual([]);
    const config = loadConfig({ POSTGRES_HOST: 'pg.example.org', POSTGRES_USER: 'id-app' });
    expect(config.sinks).toEqual({
      postgres: expect.objectContaining({ host: 'pg.example.org', user: 'id-app', database: 'postgres' }),
    });
    // A sink's own cross-checks are named with the core settings' problems, in one error.
    expect(() => loadConfig({ POSTGRES_HOST: 'pg.example.org', TENANT_NAME: 'acme' })).toThrow(
      /TENANT_BASE_URL: required[\s\S]*POSTGRES_USER: required with POSTGRES_HOST/,
    );
  });

  it('the CLI’s help (kept cheap: it loads no sink) names every sink the registry has', () => {
    for (const m of SINKS) expect([m.kind, SYNC_HELP.usage.includes(m.usage)]).toEqual([m.kind, true]);
  });

  it('each sink names what it needs; with everything set, every kind parses and builds', async () => {
    const none = { sinks: {}, storage: false, hosted: false };
    // Each sink's own settings, read by its module as the loader has it do.
    const config = loadConfig({
      AzureWebJobsStorage: 'UseDevelopmentStorage=true',
      POSTGRES_URL: 'postgresql://app@127.0.0.1:1/db',
      DOWNSTREAM_WEBHOOK_URL: 'https://example.org/in',
    });
    const all = { sinks: config.sinks, storage: true, hosted: false };
    const entries = SINKS.map((s) => (s.usage.includes(':') ? `${s.kind}:./out` : s.kind)).join(',');
    expect(parseSinks(entries, all).problems).toEqual([]);
    // Without the settings, only the sinks that need one complain, and each names it.
    expect(parseSinks(entries, none).problems.every((p) => /needs [A-Za-z_ ]+/.test(p))).toBe(true);
    const dir = await mkdtemp(join(tmpdir(), 'ti-sinks-'));
    try {
      const context = { config, secrets: { get: async () => 'whsec_eA==' }, cwd: dir };
      for (const spec of parseSinks(entries, all).specs) {
        const sink = sinkModule(spec.kind)?.create(spec, context) as ChangeSink;
        expect(sink.description).toEqual(expect.any(String));
        // What the host and several sinks wrap it in pass on what it is (a lost `flush` lost pages): a grouping sink
        // stays one, with every method of its contract (shared/sinks/types.ts).
        const has = (s: ChangeSink) =>
          (['write', 'flush', 'drop', 'endStream', 'finish', 'close'] as const).filter(
            (m) => typeof (s as Partial<GroupingSink>)[m] === 'function',
          );
        expect([spec.kind, isGrouping(tracedSink(sink)), has(tracedSink(sink))]).toEqual([
          spec.kind,
          isGrouping(sink),
          has(sink),
        ]);
        expect([spec.kind, isGrouping(sink)]).toEqual([spec.kind, spec.kind === 'postgres']);
        expect(has(new MultiSink([sink]))).toEqual(expect.arrayContaining(has(sink)));
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
