import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { accessFixture } from '../helpers/access';
import { startCli } from '../helpers/cli';
import { eventually } from '../helpers/host';
import { sandboxFixture } from '../helpers/sandbox';
import { stackFixture } from '../helpers/stack';
import { record } from './report';

/**
 * Bounded load, loopback only: every part stops by itself. Figures are recorded for docs/reliability.md;
 * the assertions are about behaviour (counts, statuses), never about time.
 */
jest.setTimeout(600_000);
const run = promisify(execFile);

it('10 000 concurrent token requests in one process make one call to the identity provider', async () => {
  const sb = await sandboxFixture({ records: 1 });
  const access = await accessFixture(sb);
  try {
    const before = (await sb.hook('stats')).body.token.client_credentials as number;
    const started = performance.now();
    const tokens = await Promise.all(Array.from({ length: 10_000 }, () => access.m2m.getToken()));
    const ms = performance.now() - started;
    const calls = ((await sb.hook('stats')).body.token.client_credentials as number) - before;
    record({
      kind: 'load',
      what: '10 000 concurrent `getToken()` in one process',
      figure: `${calls} call to the identity provider; all 10 000 callers served in ${Math.round(ms)} ms`,
      ok: calls === 1 && new Set(tokens).size === 1,
    });
    expect(calls).toBe(1);
    expect(new Set(tokens).size).toBe(1);
  } finally {
    await access.cleanup();
    await sb.close();
  }
});

it('200 concurrent POST /api/exports: only 202 or 429, never more running than the cap, every 202 reachable', async () => {
  const stack = await stackFixture({ sandbox: { records: 20 }, env: { EXPORTS_MAX_CONCURRENT: '2' } });
  try {
    // The first request reads (discovers) the tenant's catalog; the burst then meets slow pages, so no export
    // ends (and frees its slot) while it is under way.
    const warm = await stack.json(
      'exports',
      { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"streams":["nope"]}' },
      stack.keys.function,
    );
    expect(warm.status).toBe(400);
    await stack.sb.hook('faults', { route: 'graphql', delayMs: 1500, count: 4 });
    const answers = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        stack.json(
          'exports',
          {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ streams: [['controls', 'kpis', 'users'][i % 3]] }),
          },
          stack.keys.function,
        ),
      ),
    );
    const counts = new Map<number, number>();
    for (const a of answers) counts.set(a.status, (counts.get(a.status) ?? 0) + 1);
    const accepted = answers.filter((a) => a.status === 202).map((a) => a.body.id as string);
    const reachable = await Promise.all(
      accepted.map(async (id) => (await stack.json(`exports/${id}`, {}, stack.keys.function)).status),
    );
    for (const id of accepted)
      await eventually(
        async () =>
          ['completed', 'failed'].includes(
            (await stack.json(`exports/${id}`, {}, stack.keys.function)).body.status,
          ),
        `export ${id} to end`,
      );
    const ok =
      [...counts.keys()].every((s) => s === 202 || s === 429) &&
      accepted.length <= 2 &&
      accepted.length >= 1 &&
      reachable.every((s) => s === 200);
    record({
      kind: 'load',
      what: '200 concurrent `POST /api/exports` (cap 2)',
      figure:
        [...counts.entries()].map(([s, n]) => `${n} × ${s}`).join(', ') +
        `; every 202 id answered ${[...new Set(reachable)].join('/')}`,
      ok,
    });
    expect([...counts.keys()].every((s) => s === 202 || s === 429)).toBe(true);
    expect(accepted.length).toBeGreaterThanOrEqual(1);
    expect(accepted.length).toBeLessThanOrEqual(2);
    expect(reachable.every((s) => s === 200)).toBe(true);
  } finally {
    await stack.close();
  }
});

it('a sync of 1 000 000 records: peak memory of the sync process beside a plain reader of the same pages', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'ti-load-'));
  const sandbox = startCli(['sandbox', '--records', '1000000'], {
    env: { LOCAL_SECRETS_FILE: join(dir, 'secrets.json') },
  });
  try {
    const info = JSON.parse(await sandbox.firstLine) as Record<string, string>;
    const child = resolve(__dirname, '../../dist/bench/sync-child.js');
    const measure = async (mode: 'raw' | 'sync') =>
      JSON.parse(
        (
          await run(process.execPath, [child, JSON.stringify({ mode, stream: 'controls', ...info })], {
            timeout: 300_000,
          })
        ).stdout,
      ) as { records: number; ms: number; peakRssMb: number };
    const raw = await measure('raw');
    const sync = await measure('sync');
    const rate = (m: { records: number; ms: number }) => Math.round((m.records / m.ms) * 1000);
    record({
      kind: 'load',
      what: 'sync of 1 000 000 records (one stream, every record a change)',
      figure:
        `peak RSS ${sync.peakRssMb.toFixed(0)} MB (a plain kept-alive node:http reader of the same pages: ${raw.peakRssMb.toFixed(0)} MB); ` +
        `${rate(sync)} records/s (reader: ${rate(raw)}/s, ratio ${(rate(sync) / rate(raw)).toFixed(2)})`,
      ok: sync.records === 1_000_000,
    });
    expect(sync.records).toBe(1_000_000);
    expect(raw.records).toBe(1_000_000);
  } finally {
    await sandbox.stop();
    await rm(dir, { recursive: true, force: true });
  }
});
