import { createHash } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { ExportStorage } from '../../shared/exports/storage';
import { writeSlice } from '../../shared/exports/slices';
import { TenantGraphqlClient } from '../../shared/graphql/client';
import { resolveStreams } from '../../sandbox/streams';
import { eventually } from '../helpers/host';
import { stackFixture, type Stack } from '../helpers/stack';

jest.setTimeout(600_000);

/*
 * Exports of any size: with ACTIVITY_SLICE_SECONDS=1 on the local host, a stream of 150 000 records is written by
 * several activities, each carrying on from the cursor the one before stopped at, appending to the same blob — and
 * every record is in the file once, whatever the format.
 */
const RECORDS = 150_000;
let stack: Stack;

beforeAll(async () => {
  stack = await stackFixture({ sandbox: { records: RECORDS }, env: { ACTIVITY_SLICE_SECONDS: '1' } });
}, 120_000);
afterAll(() => stack?.close());

interface StreamStatus {
  name: string;
  status: string;
  records?: number;
  sha256?: string;
  bytes?: number;
  slices?: number;
}

/** Posts an export, follows its status to the end (the running streams' slices as they go), and reads its files. */
async function exportOf(streams: string[], format: string, gzip = false) {
  const res = await stack.json(
    'exports',
    {
      method: 'POST',
      body: JSON.stringify({ streams, format, gzip }),
      headers: { 'content-type': 'application/json' },
    },
    stack.keys.function,
  );
  expect(res.status === 202 ? '' : res.text).toBe('');
  const seenRunning: StreamStatus[] = [];
  const done = await eventually(
    async () => {
      const s = await stack.json(`exports/${res.body.id}`, {}, stack.keys.function);
      for (const st of s.body.streams as StreamStatus[])
        if (st.status === 'running' && st.slices) seenRunning.push(st);
      return ['completed', 'failed'].includes(s.body.status) && s.body;
    },
    `export ${res.body.id} to end`,
    400_000,
  );
  const container = stack.blobService().getContainerClient('exports');
  const files = new Map<string, Buffer>();
  for (const f of done.files ?? [])
    files.set(f.stream, await container.getBlockBlobClient(`${res.body.id}/${f.file}`).downloadToBuffer());
  const manifest = done.manifestUrl
    ? JSON.parse(
        (await container.getBlockBlobClient(`${res.body.id}/manifest.json`).downloadToBuffer()).toString(),
      )
    : undefined;
  return { id: res.body.id as string, done, files, manifest, seenRunning };
}

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('exports sliced by ACTIVITY_SLICE_SECONDS', () => {
  it(`${RECORDS} records of NDJSON, gzipped: several slices, one file of several gzip members, every record once`, async () => {
    const { done, files, manifest, seenRunning } = await exportOf(['controls'], 'ndjson', true);
    expect(done.status === 'completed' ? '' : JSON.stringify(done)).toBe('');
    const [stream] = done.streams as StreamStatus[];
    expect(stream).toMatchObject({ name: 'controls', status: 'completed', records: RECORDS });
    expect(stream.slices).toBeGreaterThan(2);
    // While it ran, the status said how far it was.
    expect(seenRunning.length).toBeGreaterThan(0);
    expect(Math.max(...seenRunning.map((s) => s.records ?? 0))).toBeGreaterThan(0);
    const gz = files.get('controls') as Buffer;
    // The file's size and sha256 as the status and the manifest say (read back after the last slice committed).
    expect([gz.length, sha256(gz)]).toEqual([stream.bytes, stream.sha256]);
    expect(manifest.files[0]).toMatchObject({ stream: 'controls', records: RECORDS, sha256: stream.sha256 });
    // One gzip member per slice (each starts 1f 8b 08), read whole by zlib.
    let members = 0;
    for (
      let i = gz.indexOf(Buffer.from([0x1f, 0x8b, 0x08]));
      i >= 0;
      i = gz.indexOf(Buffer.from([0x1f, 0x8b, 0x08]), i + 1)
    )
      members++;
    expect(members).toBeGreaterThanOrEqual(stream.slices as number);
    const lines = gunzipSync(gz).toString('utf8').split('\n').filter(Boolean);
    expect(lines).toHaveLength(RECORDS);
    const ids = lines.map((l) => (JSON.parse(l) as { id: string }).id);
    expect(new Set(ids).size).toBe(RECORDS);
  });

  it('CSV and JSON across slices: the header once, one JSON array, every record once', async () => {
    const csv = await exportOf(['kpis'], 'csv');
    const json = await exportOf(['users'], 'json');
    for (const e of [csv, json]) expect(e.done.status).toBe('completed');
    const kpis = (csv.done.streams as StreamStatus[])[0];
    const users = (json.done.streams as StreamStatus[])[0];
    expect([kpis.slices, users.slices].every((n) => (n as number) > 1)).toBe(true);
    const text = (csv.files.get('kpis') as Buffer).toString('utf8');
    const rows = text.split('\r\n').filter(Boolean);
    const header = rows[0];
    expect(rows.filter((r) => r === header)).toHaveLength(1);
    expect(rows).toHaveLength(RECORDS + 1);
    const idColumn = header.split(',').indexOf('id');
    expect(new Set(rows.slice(1).map((r) => r.split(',')[idColumn])).size).toBe(RECORDS);
    const parsed = JSON.parse((json.files.get('users') as Buffer).toString('utf8')) as Array<{ id: string }>;
    expect(parsed).toHaveLength(RECORDS);
    expect(new Set(parsed.map((u) => u.id)).size).toBe(RECORDS);
    expect(sha256(json.files.get('users') as Buffer)).toBe(users.sha256);
  });

  it('a slice run again answers what it answered; one that failed runs again from the same cursor: every record once', async () => {
    const token = (await stack.sb.clientCredentials()).body.access_token as string;
    const graphql = new TenantGraphqlClient(`${stack.sb.baseUrl}/graphql`, {
      kind: 'm2m',
      getToken: async () => token,
      invalidate: () => undefined,
    });
    const storage = new ExportStorage(stack.blobService(), () => stack.blobService());
    const [stream] = resolveStreams({ select: ['reports'] });
    const task = { id: '00000000-0000-4000-8000-00000000517e', format: 'ndjson' as const, gzip: false };
    // A clock that moves a step per look: a slice stops after a few pages, whatever the machine's speed.
    let t = 0;
    const clock = { now: () => t++ };
    const first = await writeSlice(storage, graphql, stream, { ...task, slice: 0 }, { deadlineMs: 3, clock });
    expect(first).toEqual({ more: { stream: 'reports', slice: 0, records: expect.any(Number) } });
    // The same slice again (a replayed activity): the same answer, nothing written again.
    expect(
      await writeSlice(storage, graphql, stream, { ...task, slice: 0 }, { deadlineMs: 3, clock }),
    ).toEqual(first);
    // Slice 1 fails part-way (the tenant answers 400 on its fourth request): an error, nothing committed.
    await stack.sb.hook('faults', { route: 'graphql', status: 400, after: 3, count: 1 });
    await expect(
      writeSlice(
        storage,
        graphql,
        stream,
        { ...task, slice: 1 },
        { deadlineMs: Number.MAX_SAFE_INTEGER, clock },
      ),
    ).rejects.toThrow();
    await stack.sb.hook('faults/clear');
    // Run again from the same cursor, to the end.
    const last = await writeSlice(
      storage,
      graphql,
      stream,
      { ...task, slice: 1 },
      { deadlineMs: Number.MAX_SAFE_INTEGER, clock },
    );
    expect(last).toEqual({
      done: expect.objectContaining({ stream: 'reports', records: RECORDS, slices: 2 }),
    });
    expect(await writeSlice(storage, graphql, stream, { ...task, slice: 1 }, { clock })).toEqual(last);
    const text = (
      await stack
        .blobService()
        .getContainerClient('exports')
        .getBlockBlobClient(`${task.id}/reports.ndjson`)
        .downloadToBuffer()
    ).toString('utf8');
    const ids = text
      .split('\n')
      .filter(Boolean)
      .map((l) => (JSON.parse(l) as { id: string }).id);
    expect([ids.length, new Set(ids).size]).toEqual([RECORDS, RECORDS]);
    if ('done' in last) expect(sha256(Buffer.from(text))).toBe(last.done.sha256);
  });
});
