import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startSandboxProcess } from './sync';
import { timedProcess, writeRssHook } from './timed-process';

/**
 * `bench -- discover`: `tenant-integrations discover --json` against the sandbox's `odd` schema — a record whose
 * fields fan out 400 × 400 × 400 (a 180 KB schema, 64 million leaves below one record) and a type without fields —
 * as an operator runs it: time to its answer and the process's peak RSS. Beside it, in the same run, the floor: a
 * plain script that fetches a token, asks the same introspection query and builds the schema with graphql-js (what
 * no discovery can do without). Goals (issue 56): seconds, ≤ 300 MB; `ratio` is discover's time over the floor's.
 * And a first `sync` of the same schema with no streams file (discovery, the drift check, every stream read into
 * the dir sink), which a tick of the app does: its time and peak RSS.
 * Before the selection budget, this discover took 48 s and 3.7 GB.
 */
const ROOT = resolve(__dirname, '..', '..');
const ROUNDS = 5;

const FLOOR = `
const { buildClientSchema, getIntrospectionQuery } = require('graphql');
(async () => {
  const [authUrl, tenant, clientId, secret, baseUrl] = process.argv.slice(2);
  const t = await fetch(authUrl + '/realms/' + tenant + '/protocol/openid-connect/token', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: secret }),
    redirect: 'error',
  }).then((r) => r.json());
  const answer = await fetch(baseUrl + '/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer ' + t.access_token },
    body: JSON.stringify({ query: getIntrospectionQuery({ descriptions: false }) }),
    redirect: 'error',
  }).then((r) => r.json());
  const schema = buildClientSchema(answer.data, { assumeValid: true });
  process.stdout.write(JSON.stringify({ types: Object.keys(schema.getTypeMap()).length }) + '\\n');
})();
`;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const round = (n: number, d = 2) => Math.round(n * 10 ** d) / 10 ** d;

export async function discoverBench(): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), 'ti-bench-discover-'));
  writeRssHook(dir);
  writeFileSync(join(dir, 'floor.js'), FLOOR);
  const sandbox = await startSandboxProcess(40, ['--schema', 'odd']);
  try {
    const { info } = sandbox;
    writeFileSync(join(dir, 'secrets.json'), JSON.stringify({ 'tenant-client-secret': info.clientSecret }));
    const env = {
      ...process.env,
      TENANT_NAME: info.tenant,
      TENANT_BASE_URL: info.baseUrl,
      TENANT_AUTH_URL: info.authUrl,
      TENANT_CLIENT_ID: info.clientId,
      LOCAL_SECRETS_FILE: join(dir, 'secrets.json'),
      NODE_PATH: join(ROOT, 'node_modules'),
    };
    const discover: Array<{ ms: number; rssMb: number }> = [];
    const sync: Array<{ ms: number; rssMb: number }> = [];
    const floor: Array<{ ms: number; rssMb: number }> = [];
    let fields = 0;
    for (let i = 0; i < ROUNDS; i++) {
      // Alternated, so that neither gets the quieter moments of the machine.
      const d = await timedProcess(
        [join(ROOT, 'bin', 'tenant-integrations.js'), 'discover', '--json'],
        env,
        dir,
      );
      const found = JSON.parse(d.out) as { proposals: Array<{ stream: string; fields: number }> };
      fields = found.proposals.find((p) => p.stream === 'waaiers')?.fields ?? 0;
      discover.push(d);
      rmSync(join(dir, 'sync-state'), { recursive: true, force: true });
      const s = await timedProcess(
        [join(ROOT, 'bin', 'tenant-integrations.js'), 'sync', '--sink', `dir:${join(dir, 'out')}`, '--json'],
        env,
        dir,
      );
      if (!(JSON.parse(s.out) as { ok: boolean }).ok) throw new Error(`the sync failed: ${s.out}`);
      sync.push(s);
      floor.push(
        await timedProcess(
          [join(dir, 'floor.js'), info.authUrl, info.tenant, info.clientId, info.clientSecret, info.baseUrl],
          env,
          dir,
        ),
      );
    }
    const ms = median(discover.map((d) => d.ms));
    const floorMs = median(floor.map((d) => d.ms));
    const rssMb = Math.max(...discover.map((d) => d.rssMb));
    const syncMs = median(sync.map((d) => d.ms));
    const syncRssMb = Math.max(...sync.map((d) => d.rssMb));
    console.error(
      `discover (odd schema, medians of ${ROUNDS}): ${round(ms, 0)} ms, peak RSS ${round(rssMb, 1)} MB (worst); ` +
        `the floor (token, introspection, buildClientSchema): ${round(floorMs, 0)} ms, ${round(Math.max(...floor.map((d) => d.rssMb)), 1)} MB; ` +
        `ratio ${round(ms / floorMs)}; the fan-out's stream selects ${fields} fields; ` +
        `a first sync of the schema: ${round(syncMs, 0)} ms, peak RSS ${round(syncRssMb, 1)} MB (worst)`,
    );
    return {
      bench: 'discover',
      ms: round(ms, 0),
      peakRssMb: round(rssMb, 1),
      floorMs: round(floorMs, 0),
      ratio: round(ms / floorMs),
      fanOutFields: fields,
      syncMs: round(syncMs, 0),
      syncPeakRssMb: round(syncRssMb, 1),
      goal: { seconds: ms < 10_000 && syncMs < 10_000, rssMb: rssMb <= 300 && syncRssMb <= 300 },
    };
  } finally {
    sandbox.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
