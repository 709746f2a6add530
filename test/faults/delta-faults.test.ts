import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalFileSecretStore } from '../../shared/secrets';
import { CLI } from '../helpers/cli';
import { asRow, readDelta } from '../helpers/delta';
import { sandboxFixture, type SandboxFixture } from '../helpers/sandbox';
import { sourceRecords } from '../helpers/source';
import { record } from './report';

/**
 * The delta sink's "exactly once" against the crudest fault there is: the sync process killed (SIGKILL) at moments
 * spread over a run — reading pages, staging them, writing data files, between the changes table's commit and the
 * current table's — and run again until a run completes. delta-rs then reads the tables: each current table equal to
 * the source, each change in its changes table once. Then the same for an incremental run after changes.
 */
jest.setTimeout(300_000);

const RECORDS = 250;
const STREAMS = ['controls', 'kpis'];
/**
 * When each kill lands: at times after the process starts (spread over start-up, the pass and the commits), and once
 * the moment the first stream's changes table has this run's version — between the two tables' commits.
 */
const KILLS: Array<number | 'between commits'> = [400, 900, 'between commits', 1300, 1700, 2100, 2600, 3600];

let sb: SandboxFixture;
let dir: string;
let env: NodeJS.ProcessEnv;
beforeAll(async () => {
  sb = await sandboxFixture({ records: RECORDS });
  dir = await mkdtemp(join(tmpdir(), 'ti-delta-faults-'));
  const secretsFile = join(dir, 'secrets.json');
  await new LocalFileSecretStore(secretsFile).set('tenant-client-secret', sb.clientSecret);
  env = {
    ...process.env,
    ...sb.settings,
    LOCAL_SECRETS_FILE: secretsFile,
    AzureWebJobsStorage: '',
    DELTA_ROWS_PER_FILE: '40',
  };
});
afterAll(async () => {
  await sb?.close();
  await rm(dir, { recursive: true, force: true });
});

const args = [CLI, 'sync', '--streams', STREAMS.join(','), '--sink', 'delta:lake', '--full-pass', '--json'];

/** Runs the CLI, killed after `killMs` or when `killWhen` turns true: its exit code (null when killed) and output. */
const cli = (kill?: { afterMs?: number; when?: () => boolean }) =>
  new Promise<{ code: number | null; out: string }>((done) => {
    const c = spawn(process.execPath, args, { env, cwd: dir });
    let out = '';
    c.stdout.on('data', (d) => (out += d));
    const timer = kill?.afterMs === undefined ? undefined : setTimeout(() => c.kill('SIGKILL'), kill.afterMs);
    const watch = kill?.when && setInterval(() => kill.when?.() && c.kill('SIGKILL'), 2);
    c.on('close', (code) => {
      clearTimeout(timer);
      clearInterval(watch);
      done({ code, out });
    });
  });

const versions = (table: string) => {
  const log = join(dir, 'lake', table, '_delta_log');
  return existsSync(log) ? readdirSync(log).filter((f) => /^\d{20}\.json$/.test(f)).length : 0;
};

/** Kills a run at each of KILLS_MS, then runs it to its end: what each kill left, and the final summary. */
async function killedAndResumed(
  run: number,
): Promise<{ left: string[]; summary: { runId: string; resumed: boolean } }> {
  const left: string[] = [];
  for (const kill of KILLS) {
    const r = await cli(
      kill === 'between commits'
        ? { when: () => versions(`${STREAMS[0]}_changes`) >= run }
        : { afterMs: kill },
    );
    const at = kill === 'between commits' ? 'its changes commit' : `${kill} ms`;
    if (r.code === 0) {
      left.push(`${at}: finished first`);
      return { left, summary: JSON.parse(r.out) };
    }
    left.push(`${at}: ${STREAMS.map((s) => `${s} ${versions(`${s}_changes`)}/${versions(s)}`).join(', ')}`);
  }
  const last = await cli();
  expect(last.code).toBe(0);
  return { left, summary: JSON.parse(last.out) };
}

/** `expected`: per stream, its changes-table rows and the runs that changed it (one version each, none empty). */
async function expectExactlyOnce(expected: Record<string, { changes: number; runs: number }>) {
  for (const stream of STREAMS) {
    const [source, current, changes] = await Promise.all([
      sourceRecords(env as Record<string, string>, stream),
      readDelta(join(dir, 'lake', stream), { reader: 'delta-rs' }),
      readDelta(join(dir, 'lake', `${stream}_changes`), { reader: 'delta-rs' }),
    ]);
    expect([stream, current.rows.map((r) => r._key)]).toEqual([stream, [...source.keys()].sort()]);
    for (const row of current.rows) {
      const want = asRow(source.get(String(row._key)));
      expect(Object.fromEntries(Object.keys(want).map((k) => [k, row[k]]))).toEqual(want);
    }
    expect([stream, changes.rows.length]).toEqual([stream, expected[stream].changes]);
    expect(new Set(changes.rows.map((r) => `${r.run_id} ${r.change_id}`)).size).toBe(changes.rows.length);
    expect([stream, changes.version, current.version]).toEqual([
      stream,
      expected[stream].runs - 1,
      expected[stream].runs - 1,
    ]);
  }
}

describe('delta sink: the sync process killed at moments spread over a run, and run again', () => {
  it('a first load and an incremental run, each killed at up to eight moments: every table equal to the source, each change once, one version per run', async () => {
    const observed: string[] = [];
    let ok = false;
    try {
      const first = await killedAndResumed(1);
      observed.push(`first load — killed at ${first.left.join('; ')} (changes/current versions per stream)`);
      await expectExactlyOnce({
        controls: { changes: RECORDS, runs: 1 },
        kpis: { changes: RECORDS, runs: 1 },
      });

      await sb.hook('data/mutate', { collection: 'controls', creates: 3, updates: 4, deletes: 2 });
      const second = await killedAndResumed(2);
      observed.push(`incremental — killed at ${second.left.join('; ')}`);
      // kpis did not change: no version of the second run.
      await expectExactlyOnce({
        controls: { changes: RECORDS + 9, runs: 2 },
        kpis: { changes: RECORDS, runs: 1 },
      });
      observed.push(
        'delta-rs: every current table equal to the source, every change once, one version per run',
      );
      ok = true;
    } finally {
      record({
        kind: 'fault',
        area: 'delta sink',
        fault:
          'the sync process killed (SIGKILL) at up to eight moments per run, at moments from start-up to the commits',
        expected:
          'each table committed once per run (txn); the current tables equal the source; each change once',
        observed: observed.join('; '),
        ok,
      });
    }
  });
});
