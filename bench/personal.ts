import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startSandboxProcess } from './sync';
import { timedProcess, writeRssHook } from './timed-process';

/**
 * `bench -- personal`: what hashing personal data costs a sync, through what users run — `tenant-integrations sync
 * --full` of the sandbox's three streams that hold people (users, personnel, controls with their owners; 20 000
 * records each) into the dir sink, under SYNC_PERSONAL_DATA=hash (every name and address a keyed HMAC) and, in the
 * same run, alternated, under `keep` (the same sync with nothing to do to a page): medians of time, worst peak RSS,
 * and their ratios. Goal: within 1.15 of `keep`.
 */
const ROOT = resolve(__dirname, '..', '..');
const ROUNDS = 5;
const RECORDS = 20_000;
const STREAMS = 'users,personnel,controls';
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const round = (n: number, d = 2) => Math.round(n * 10 ** d) / 10 ** d;

export async function personalBench(): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), 'ti-bench-personal-'));
  writeRssHook(dir);
  const sandbox = await startSandboxProcess(RECORDS);
  try {
    const { info } = sandbox;
    writeFileSync(join(dir, 'secrets.json'), JSON.stringify({ 'tenant-client-secret': info.clientSecret }));
    const env = (policy: string) => ({
      ...process.env,
      TENANT_NAME: info.tenant,
      TENANT_BASE_URL: info.baseUrl,
      TENANT_AUTH_URL: info.authUrl,
      TENANT_CLIENT_ID: info.clientId,
      LOCAL_SECRETS_FILE: join(dir, 'secrets.json'),
      SYNC_PERSONAL_DATA: policy,
    });
    const sync = async (policy: string) => {
      const r = await timedProcess(
        [
          join(ROOT, 'bin', 'tenant-integrations.js'),
          'sync',
          '--full',
          '--streams',
          STREAMS,
          '--sink',
          `dir:${join(dir, `out-${policy}`)}`,
          '--json',
        ],
        env(policy),
        dir,
      );
      if (!(JSON.parse(r.out) as { ok: boolean }).ok) throw new Error(`the ${policy} sync failed: ${r.out}`);
      return r;
    };
    // Discovery, the stored catalog and the hash key once, before either is measured.
    await sync('hash');
    const hash: Array<{ ms: number; rssMb: number }> = [];
    const keep: Array<{ ms: number; rssMb: number }> = [];
    for (let i = 0; i < ROUNDS; i++) {
      // Alternated, so that neither gets the quieter moments of the machine.
      for (const [policy, into] of [
        ['hash', hash],
        ['keep', keep],
      ] as const) {
        rmSync(join(dir, `out-${policy}`), { recursive: true, force: true });
        into.push(await sync(policy));
      }
    }
    const [hashMs, keepMs] = [median(hash.map((r) => r.ms)), median(keep.map((r) => r.ms))];
    const [hashMb, keepMb] = [Math.max(...hash.map((r) => r.rssMb)), Math.max(...keep.map((r) => r.rssMb))];
    console.error(
      `sync --full of ${STREAMS} (${RECORDS} records each, medians of ${ROUNDS}): hash ${round(hashMs, 0)} ms, ` +
        `keep ${round(keepMs, 0)} ms, ratio ${round(hashMs / keepMs)}; peak RSS hash ${round(hashMb, 1)} MB, ` +
        `keep ${round(keepMb, 1)} MB, ratio ${round(hashMb / keepMb)}`,
    );
    return {
      bench: 'personal',
      records: RECORDS * 3,
      hashMs: round(hashMs, 0),
      keepMs: round(keepMs, 0),
      ratio: round(hashMs / keepMs),
      hashPeakRssMb: round(hashMb, 1),
      keepPeakRssMb: round(keepMb, 1),
      rssRatio: round(hashMb / keepMb),
      goal: { ratio: hashMs / keepMs <= 1.15 },
    };
  } finally {
    sandbox.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
