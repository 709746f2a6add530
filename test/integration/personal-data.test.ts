import { readFile, readdir } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import type { Change } from '../../shared/changes';
import { runCli } from '../helpers/cli';
import { cliSandbox, type SyncSummary } from '../helpers/cli-sandbox';
import { readDelta } from '../helpers/delta';

const READER = resolve(__dirname, '../helpers/read-parquet.mjs');
const readParquet = (file: string) =>
  JSON.parse(execFileSync(process.execPath, [READER, file], { maxBuffer: 64 << 20 }).toString()) as {
    columns: unknown[];
    rows: Array<Record<string, unknown>>;
  };

/**
 * Personal data as the customer's policy says, through the CLI an operator runs against the sandbox: discovery marks
 * the fields (users', personnel's and every embedded person's), and under SYNC_PERSONAL_DATA=hash a sync into a
 * folder and a Delta table and an export hold no e-mail address and no name as the tenant sent it — the same
 * person's hash equal in every stream and every run; under `drop` the fields are not there at all.
 */
jest.setTimeout(180_000);

const RECORDS = 150;
const t = cliSandbox({ records: RECORDS }, 'ti-personal-');
/** The app's own default for SYNC_PERSONAL_DATA (the fixture's `keep` unset), unless a test says otherwise. */
const env = (extra: Record<string, string> = {}) => t.env({ SYNC_PERSONAL_DATA: '', ...extra });

type Rec = Record<string, unknown>;

const ndjson = async (file: string): Promise<Rec[]> =>
  (await readFile(file, 'utf8').catch(() => ''))
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Rec);

/** Every string anywhere in a value. */
function strings(v: unknown, out: string[] = []): string[] {
  if (typeof v === 'string') out.push(v);
  else if (Array.isArray(v)) for (const x of v) strings(x, out);
  else if (v && typeof v === 'object') for (const x of Object.values(v)) strings(x, out);
  return out;
}

/** The tenant's own values, as an export under `keep` writes them. */
async function asSent(): Promise<Record<string, Rec[]>> {
  const out = join(t.dir, 'as-sent');
  const r = await runCli(['export', '--format', 'ndjson', '--out', out], {
    env: env({ SYNC_PERSONAL_DATA: 'keep' }),
  });
  expect(r.code).toBe(0);
  const by: Record<string, Rec[]> = {};
  for (const s of ['users', 'personnel', 'controls', 'evidence', 'reports'])
    by[s] = await ndjson(join(out, `${s}.ndjson`));
  return by;
}

/** The e-mail addresses and names the tenant sent: none may leave under `hash` or `drop`. */
function personalValues(sent: Record<string, Rec[]>): Set<string> {
  const values = new Set<string>();
  for (const u of sent.users) [u.name, u.email].forEach((v) => values.add(String(v)));
  for (const p of sent.personnel) [p.firstName, p.lastName, p.email].forEach((v) => values.add(String(v)));
  for (const c of sent.controls) {
    const o = c.owner as Rec;
    [o.name, o.email].forEach((v) => values.add(String(v)));
  }
  for (const e of sent.evidence) values.add(String((e.uploadedBy as Rec).name));
  for (const r of sent.reports) values.add(String((r.author as Rec).name));
  return values;
}

async function syncTo(extra: Record<string, string>, args: string[] = []) {
  const r = await runCli(
    ['sync', '--sink', `dir:${join(t.dir, 'out')},delta:${join(t.dir, 'lake')}`, '--json', ...args],
    { env: env(extra) },
  );
  expect([r.code, r.stderr.slice(0, 400)]).toEqual([0, expect.any(String)]);
  return JSON.parse(r.stdout) as SyncSummary;
}

const changesOf = async (runId: string, stream: string) =>
  (await ndjson(join(t.dir, 'out', runId, `${stream}.ndjson`))) as unknown as Change[];

const recordsOf = async (runId: string, stream: string) =>
  Object.fromEntries((await changesOf(runId, stream)).map((c) => [String(c.id), c.record as Rec])) as Record<
    string,
    Rec
  >;

describe('personal data, as the policy says', () => {
  it('discover names the personal fields of users, personnel and every embedded person, and no others', async () => {
    const r = await runCli(['discover', '--json'], { env: env() });
    expect(r.code).toBe(0);
    const found = JSON.parse(r.stdout) as {
      streams: Array<{ name: string; personal?: Record<string, string> }>;
      proposals: Array<{ stream: string; personal?: Array<{ field: string; kind: string }> }>;
    };
    const marked = Object.fromEntries(
      found.streams.map((s) => [s.name, Object.keys(s.personal ?? {}).sort()]),
    );
    expect(marked).toEqual({
      controls: ['owner.email', 'owner.name'],
      evidence: ['uploadedBy.email', 'uploadedBy.name'],
      kpis: [],
      personnel: ['email', 'employeeNumber', 'firstName', 'lastName'],
      reports: ['author.email', 'author.name'],
      users: ['email', 'name'],
    });
    // Left at `default`: SYNC_PERSONAL_DATA decides, and the streams file can say otherwise per field.
    for (const s of found.streams) for (const p of Object.values(s.personal ?? {})) expect(p).toBe('default');
    const kinds = Object.fromEntries(
      found.proposals.flatMap((p) => (p.personal ?? []).map((f) => [`${p.stream}.${f.field}`, f.kind])),
    );
    expect(kinds).toMatchObject({
      'users.email': 'e-mail address',
      'users.name': 'name',
      'personnel.employeeNumber': 'employee number',
      'controls.owner.email': 'e-mail address',
    });
    const text = await runCli(['discover'], { env: env() });
    expect(text.stderr).toMatch(
      /personal: owner\.name \(name\), owner\.email \(e-mail address\) — hashed \(SYNC_PERSONAL_DATA=hash/,
    );
  });

  it('hash: no address or name as sent in a folder, a Delta table or an export; one person one hash everywhere, every run', async () => {
    const sent = await asSent();
    const personal = personalValues(sent);
    expect(personal.size).toBeGreaterThan(RECORDS);

    const first = await syncTo({});
    expect(first.ok).toBe(true);
    const out = join(t.dir, 'out');
    const leaked: string[] = [];
    for (const file of await readdir(join(out, first.runId)))
      if (file.endsWith('.ndjson'))
        for (const c of await ndjson(join(out, first.runId, file)))
          leaked.push(...strings(c.record).filter((s) => personal.has(s)));
    const streams = ['controls', 'evidence', 'personnel', 'kpis', 'reports', 'users'];
    for (const table of [...streams, ...streams.map((x) => `${x}_changes`)]) {
      const read = await readDelta(join(t.dir, 'lake', table));
      expect(read.rows.length).toBeGreaterThan(0);
      for (const row of read.rows)
        for (const v of strings(row))
          leaked.push(
            ...(v.startsWith('{') ? strings(JSON.parse(v) as unknown) : [v]).filter((s) => personal.has(s)),
          );
    }
    const exported = join(t.dir, 'export');
    const ex = await runCli(['export', '--format', 'ndjson', '--out', exported], {
      env: env({ SYNC_PERSONAL_DATA: 'hash' }),
    });
    expect(ex.code).toBe(0);
    for (const s of ['users', 'personnel', 'controls', 'evidence', 'reports'])
      for (const r of await ndjson(join(exported, `${s}.ndjson`)))
        leaked.push(...strings(r).filter((v) => personal.has(v)));
    expect(leaked).toEqual([]);

    // One person, one hash: a user, the employee of the same number and the controls they own.
    const users = await recordsOf(first.runId, 'users');
    const personnel = await recordsOf(first.runId, 'personnel');
    const controls = Object.values(await recordsOf(first.runId, 'controls'));
    const sentUsers = Object.fromEntries(sent.users.map((u) => [String(u.id), u]));
    let owners = 0;
    for (const c of controls) {
      const owner = c.owner as Rec;
      const user = users[String(owner.id)];
      if (!user) continue;
      owners++;
      expect(owner.email).toBe(user.email);
      expect(owner.name).toBe(user.name);
      expect(String(owner.email)).toMatch(/^h:[0-9a-f]{32}$/);
    }
    expect(owners).toBeGreaterThan(3);
    const sentPersonnel = sent.personnel.map((p) => String(p.email));
    let employees = 0;
    for (const p of Object.values(personnel)) {
      const u = Object.values(users).find((x) => x.email === p.email);
      if (!u) continue;
      employees++;
      // The same address as sent in both streams: the hash is what joins them.
      expect(sentPersonnel).toContain(String(sentUsers[String(u.id)]?.email));
    }
    expect(employees).toBeGreaterThan(RECORDS / 2);
    // The exported hash is the synced one.
    const exportedUsers = await ndjson(join(exported, 'users.ndjson'));
    expect(exportedUsers.find((u) => u.id === Object.values(users)[0].id)?.email).toBe(
      Object.values(users)[0].email,
    );

    // Stable: a second full sync, from nothing, hashes every value the same.
    const again = await syncTo({ SYNC_PERSONAL_DATA: 'hash' }, ['--full']);
    const users2 = await recordsOf(again.runId, 'users');
    expect(Object.keys(users2).length).toBe(Object.keys(users).length);
    for (const [key, u] of Object.entries(users)) expect([key, users2[key]?.email]).toEqual([key, u.email]);
  });

  it('drop: the fields are not asked of the tenant, nor in any file; changing the policy reads every record again', async () => {
    await syncTo({ SYNC_PERSONAL_DATA: 'hash' });
    const dropped = await syncTo({ SYNC_PERSONAL_DATA: 'drop' });
    expect(dropped.ok).toBe(true);
    // A policy is part of the stream's definition: every record reads as an update, never as the old value kept.
    expect(dropped.streams.users).toMatchObject({ pass: 'full', updated: RECORDS });
    expect(dropped.streams.kpis).toMatchObject({ updated: 0, created: 0 });
    for (const stream of ['users', 'personnel', 'controls']) {
      for (const c of await changesOf(dropped.runId, stream)) {
        const r = c.record as Rec;
        expect(Object.keys(r)).not.toEqual(expect.arrayContaining(['email']));
        expect(r).not.toHaveProperty('firstName');
        expect(r).not.toHaveProperty('name');
        if (r.owner) expect(Object.keys(r.owner as Rec).sort()).toEqual(['id']);
      }
    }
    const lake = await readDelta(join(t.dir, 'lake', 'users'));
    for (const row of lake.rows) expect(row.email ?? null).toBeNull();
    // Dropped from the first run: the tables never have the columns.
    const fresh = join(t.dir, 'fresh-lake');
    const r = await runCli(['sync', '--full', '--sink', `delta:${fresh}`, '--json'], {
      env: env({ SYNC_PERSONAL_DATA: 'drop' }),
    });
    expect(r.code).toBe(0);
    const columns = async (table: string) => (await readDelta(join(fresh, table))).schema.map(([n]) => n);
    expect(await columns('users')).toEqual(expect.arrayContaining(['_key', 'id', 'role']));
    expect(await columns('users')).not.toEqual(expect.arrayContaining(['email']));
    expect(await columns('users')).not.toEqual(expect.arrayContaining(['name']));
    for (const c of ['firstName', 'lastName', 'email', 'employeeNumber'])
      expect(await columns('personnel')).not.toEqual(expect.arrayContaining([c]));
  });

  it('erase: no folder file, Delta table or staged page holds the key after, in any run; recorded without a value', async () => {
    const first = await syncTo({});
    const { updated } = (
      await t.sb.hook('data/mutate', { collection: 'users', creates: 0, updates: 3, deletes: 0 })
    ).body as { updated: string[] };
    const second = await syncTo({});
    const key = updated[0];
    expect((await changesOf(first.runId, 'users')).some((c) => c.id === key)).toBe(true);
    expect((await changesOf(second.runId, 'users')).some((c) => c.id === key)).toBe(true);
    const sinks = `dir:${join(t.dir, 'out')},delta:${join(t.dir, 'lake')}`;
    const r = await runCli(
      ['erase', '--stream', 'users', '--key', key, '--sink', sinks, '--by', 'dpo@example.org', '--json'],
      {
        env: env(),
      },
    );
    expect([r.code, r.stderr]).toEqual([0, expect.any(String)]);
    const run = JSON.parse(r.stdout) as {
      id: string;
      kind: string;
      outcome: string;
      erase: { by: string; key: string; erased: Array<{ place: string; count: number }> };
    };
    expect(run).toMatchObject({ kind: 'erase', outcome: 'succeeded' });
    expect(run.erase).toMatchObject({ by: 'dpo@example.org', key, stream: 'users' });
    // Two runs' change files, the current table's row and its two changes in the changes table.
    expect(run.erase.erased.reduce((n, e) => n + e.count, 0)).toBe(5);
    for (const runId of [first.runId, second.runId]) {
      const left = await changesOf(runId, 'users');
      expect(left.some((c) => c.id === key)).toBe(false);
      expect(left.length).toBeGreaterThan(0);
    }
    const current = await readDelta(join(t.dir, 'lake', 'users'));
    expect(current.rows.map((row) => row._key)).not.toContain(key);
    expect(current.rows).toHaveLength(RECORDS - 1);
    const changes = await readDelta(join(t.dir, 'lake', 'users_changes'));
    expect(changes.rows.filter((row) => row.key === key)).toEqual([]);
    // The newest version (readers list the history in their own order).
    expect(changes.history.reduce((a, b) => (b.version > a.version ? b : a)).operation).toBe('DELETE');
    // The record says who, when and which key — and nothing of what was erased.
    const kept = await readFile(join(t.dir, 'run-history.json'), 'utf8');
    expect(kept).toContain(run.id);
    const user = (await asSent()).users.find((u) => u.id === key);
    expect(kept).toContain(key);
    for (const v of strings(user)) if (v !== key) expect(kept).not.toContain(v);
    // A sync after reads on as before: the erased record is unchanged at the tenant, so not sent again.
    const third = await syncTo({});
    expect(third.streams.users).toMatchObject({ created: 0, updated: 0 });
    const again = await runCli(['erase', '--stream', 'users', '--key', key, '--sink', sinks, '--json'], {
      env: env(),
    });
    expect((JSON.parse(again.stdout) as { erase: { erased: unknown[] } }).erase.erased).toEqual([]);
  });

  it('erase: a Parquet change file is written again without the key, every other row as it was', async () => {
    const out = join(t.dir, 'pq');
    const r = await runCli(['sync', '--sink', `dir:${out}`, '--json'], {
      env: env({ SYNC_FORMAT: 'parquet' }),
    });
    expect(r.code).toBe(0);
    const { runId } = JSON.parse(r.stdout) as SyncSummary;
    const file = join(out, runId, 'controls.parquet');
    const before = readParquet(file);
    const key = String(before.rows[7].id);
    const erased = await runCli(
      ['erase', '--stream', 'controls', '--key', key, '--sink', `dir:${out}`, '--json'],
      {
        env: env(),
      },
    );
    expect(erased.code).toBe(0);
    const after = readParquet(file);
    expect(after.columns).toEqual(before.columns);
    expect(after.rows).toEqual(before.rows.filter((row) => row.id !== key));
  });

  it('a policy on a key is refused before any run, naming the field and the fix', async () => {
    const file = join(t.dir, 'streams.json');
    const { writeFile } = await import('node:fs/promises');
    await runCli(['discover', '--out', file], { env: env() });
    const streams = JSON.parse(await readFile(file, 'utf8')) as { streams: Array<Rec> };
    const users = streams.streams.find((s) => s.name === 'users') as Rec;
    users.personal = { ...(users.personal as Rec), id: 'hash' };
    await writeFile(file, JSON.stringify(streams));
    const r = await runCli(['sync', '--sink', `dir:${join(t.dir, 'out')}`], {
      env: env({ SYNC_STREAMS_FILE: file }),
    });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(
      /stream users: personal\.id: id is the key: it cannot be hashed — set it to "keep"/,
    );
    expect(await readdir(t.dir)).not.toContain('out');
  });
});
