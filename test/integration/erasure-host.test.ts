import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { readDelta } from '../helpers/delta';
import { eventually } from '../helpers/host';
import { stackFixture } from '../helpers/stack';

/**
 * An erasure as an operator asks the running app for one: POST /api/manage/erasures on the local host (the real
 * app, Azurite, the sandbox), with the app's own sinks — the blob container and a Delta location. The record leaves
 * both, the erasure is a run in the history, and a bad request is refused before anything is touched.
 */
jest.setTimeout(240_000);

describe('POST /api/manage/erasures', () => {
  it('takes the record out of the blob sink and the Delta tables, and is a run in the history', async () => {
    const lake = join(tmpdir(), `ti-erase-lake-${process.pid}-${Date.now()}`);
    const stack = await stackFixture({
      sandbox: { records: 60 },
      env: { SYNC_SINKS: `blob,delta:${lake}`, SYNC_STREAMS: 'users' },
    });
    try {
      expect((await stack.json('manage/sync', { method: 'POST' })).status).toBe(202);
      const run = await eventually(async () => {
        const [latest] = (await stack.json('manage/runs?kind=sync')).body.runs;
        return latest?.outcome === 'succeeded' && latest;
      }, 'the sync');
      const container = stack.blobService().getContainerClient('sync-changes');
      const file = container.getBlockBlobClient(`acme/${run.id}/users.ndjson.gz`);
      const ids = async () =>
        gunzipSync(await file.downloadToBuffer())
          .toString('utf8')
          .split('\n')
          .filter(Boolean)
          .map((l) => (JSON.parse(l) as { id: string }).id);
      const key = (await ids())[5];

      // Refused before anything is touched: a body that is not the erasure's, one too large, no admin key.
      const bad = await stack.json('manage/erasures', {
        method: 'POST',
        body: JSON.stringify({ stream: 'users', key }),
        headers: { 'content-type': 'application/json' },
      });
      expect(bad.status).toBe(400);
      expect(bad.body).toMatchObject({
        code: 'invalid_request',
        problems: ['by: Invalid input: expected string, received undefined'],
      });
      const large = await stack.json('manage/erasures', {
        method: 'POST',
        body: JSON.stringify({ stream: 'users', key: 'x'.repeat(9000), by: 'a' }),
        headers: { 'content-type': 'application/json' },
      });
      expect(large.status).toBe(413);
      const anonymous = await stack.json(
        'manage/erasures',
        { method: 'POST', body: JSON.stringify({ stream: 'users', key, by: 'a' }) },
        null,
      );
      expect(anonymous.status).toBe(401);
      expect(await ids()).toContain(key);

      const done = await stack.json('manage/erasures', {
        method: 'POST',
        body: JSON.stringify({ stream: 'users', key, by: 'ticket DPO-17' }),
        headers: { 'content-type': 'application/json' },
      });
      expect(done.status).toBe(200);
      expect(done.body).toMatchObject({
        kind: 'erase',
        outcome: 'succeeded',
        trigger: 'request',
        erase: { stream: 'users', key, by: 'ticket DPO-17' },
      });
      // The blob's change, the current row and its change in the changes table.
      expect((done.body.erase.erased as Array<{ count: number }>).reduce((n, e) => n + e.count, 0)).toBe(3);
      const left = await ids();
      expect(left).not.toContain(key);
      expect(left).toHaveLength(59);
      expect((await readDelta(join(lake, 'users'))).rows.map((r) => r._key)).not.toContain(key);
      expect((await readDelta(join(lake, 'users_changes'))).rows.map((r) => r.key)).not.toContain(key);
      const [erasure] = (await stack.json('manage/runs?kind=erase')).body.runs;
      expect(erasure).toMatchObject({ id: done.body.id, outcome: 'succeeded' });
    } finally {
      await stack.close();
      rmSync(lake, { recursive: true, force: true });
    }
  });
});
