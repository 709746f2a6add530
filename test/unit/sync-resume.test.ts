import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { Webhook } from 'standardwebhooks';
import { loadConfig } from '../../shared/app';
import { ConfigError, UpstreamError } from '../../shared/errors';
import { OffsetClock } from '../../shared/clock';
import { ChangeDetector } from '../../shared/sync/change-detector';
import { decodeCheckpoint, encodeRecord, logEntries } from '../../shared/sync/checkpoint';
import { prefetch } from '../../shared/graphql/prefetch';
import { BlobSink, DirectorySink, MultiSink, sinksFor, WebhookSink } from '../../shared/sinks';
import { changeIdFor, recordJson } from '../../shared/sync/fingerprint';
import { EntryWriter } from '../../shared/sync/snapshot';

const counts = (read: number) => ({ read, created: read, updated: 0, deleted: 0, unchanged: 0 });

describe('checkpoint log', () => {
  const log = () => {
    const d = new ChangeDetector('controls', undefined, { idPath: 'id' });
    d.page([{ id: 'a' }, { id: 'b' }]);
    const p1 = d.takePageEntries();
    d.page([{ id: 'c' }]);
    const p2 = d.takePageEntries();
    return Buffer.concat([
      encodeRecord({ kind: 'start', runId: 'r1', previousDigest: 'none', full: false }),
      encodeRecord(
        { kind: 'page', page: 1, cursor: 'c1', last: false, changed: true, counts: counts(2) },
        p1,
      ),
      encodeRecord(
        { kind: 'page', page: 2, cursor: 'c2', last: true, changed: false, counts: counts(3) },
        p2,
      ),
    ]);
  };

  /** A log as a store streams it: in chunks of `size` bytes, so records straddle chunk borders. */
  async function* chunks(bytes: Buffer, size = 7) {
    for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, at + size);
  }
  const all = async (it: AsyncIterable<Buffer>) => {
    const out: Buffer[] = [];
    for await (const b of it) out.push(b);
    return Buffer.concat(out);
  };
  const entriesOf = (ids: string[]) => {
    const w = new EntryWriter();
    for (const id of ids) w.add(Buffer.from(id), changeIdFor('controls', id, recordJson({ id })));
    return w.take();
  };

  it.each([1, 7, 4096])(
    'gives the last page, its cursor, the pages with changes and every entry (chunks of %i bytes)',
    async (size) => {
      const cp = await decodeCheckpoint(chunks(log(), size));
      expect(cp).toMatchObject({ runId: 'r1', page: 2, cursor: 'c2', listingDone: true, changedPages: [1] });
      expect(cp?.counts.read).toBe(3);
      // The next snapshot, read back from the log: a, b and c in the order they were seen.
      expect((await all(logEntries(chunks(log(), size)))).equals(entriesOf(['a', 'b', 'c']))).toBe(true);
    },
  );

  it('reads the same records and entries however the log is cut into chunks', async () => {
    const whole = log();
    const expected = entriesOf(['a', 'b', 'c']);
    // Cuts anywhere: inside a length prefix, inside the JSON, inside the entries, several in one record.
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.integer({ min: 1, max: whole.length - 1 }), { maxLength: 12 }),
        async (cuts) => {
          const at = [0, ...[...cuts].sort((a, b) => a - b), whole.length];
          const pieces = async function* () {
            for (let i = 1; i < at.length; i++) yield whole.subarray(at[i - 1], at[i]);
          };
          const cp = await decodeCheckpoint(pieces());
          expect(cp).toMatchObject({ page: 2, cursor: 'c2', listingDone: true, changedPages: [1] });
          expect((await all(logEntries(pieces()))).equals(expected)).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('ignores a torn last record (the process died mid-append) and reads nothing without a start', async () => {
    const whole = log();
    const torn = await decodeCheckpoint(chunks(whole.subarray(0, whole.length - 5)));
    expect(torn).toMatchObject({ page: 1, cursor: 'c1', listingDone: false });
    expect(await all(logEntries(chunks(whole.subarray(0, whole.length - 5))))).toEqual(entriesOf(['a', 'b']));
    expect(await decodeCheckpoint(chunks(Buffer.alloc(0)))).toBeUndefined();
    expect(await decodeCheckpoint(chunks(whole.subarray(60)))).toBeUndefined();
    // Garbage where a record should be ends the log there.
    const start = encodeRecord({ kind: 'start', runId: 'r1', previousDigest: 'none', full: false });
    const garbled = Buffer.concat([
      start,
      Buffer.from('\0\0\0\x10\0\0\0\x04{{{{xxxxxxxx'),
      whole.subarray(start.length),
    ]);
    expect(await decodeCheckpoint(chunks(garbled))).toMatchObject({ runId: 'r1', page: 0 });
  });

  it('a resumed pass marks what it saw, so deletions come only from records not seen in the whole pass', async () => {
    const previous = entriesOf(['a', 'b', 'c']);
    const first = new ChangeDetector('controls', previous, { idPath: 'id' });
    first.page([{ id: 'a' }]);
    const entries = first.takePageEntries();
    const resumed = new ChangeDetector('controls', previous, { idPath: 'id' });
    await resumed.resume({ counts: first.counts }, chunks(entries, entries.length));
    expect(resumed.counts.read).toBe(1);
    resumed.page([{ id: 'c' }]);
    expect(resumed.counts.read).toBe(2);
    expect((await resumed.finish('delete')).map((c) => c.id)).toEqual(['b']);
  });
});

describe('prefetch', () => {
  it('reads at most two pages ahead of the consumer, never more', async () => {
    let produced = 0;
    async function* source() {
      for (let i = 0; i < 5; i++) {
        produced++;
        yield i;
      }
    }
    const seen: Array<[number, number]> = [];
    for await (const v of prefetch(source())) {
      await new Promise((r) => setTimeout(r, 5));
      seen.push([v, produced]);
    }
    // While the caller works on page v, pages v+1 and v+2 are already fetched (bounded: never v+3).
    expect(seen).toEqual([
      [0, 3],
      [1, 4],
      [2, 5],
      [3, 5],
      [4, 5],
    ]);
  });

  it('a caller that stops early (a slice at its deadline) stops the reading and closes the source', async () => {
    let produced = 0;
    let closed = false;
    async function* source() {
      try {
        for (let i = 0; i < 100; i++) {
          produced++;
          yield i;
        }
      } finally {
        closed = true;
      }
    }
    for await (const v of prefetch(source())) if (v === 1) break;
    expect(closed).toBe(true);
    expect(produced).toBeLessThanOrEqual(4);
  });

  it('a failure of the read-ahead surfaces at the next page, not as an unhandled rejection', async () => {
    async function* source() {
      yield 1;
      throw new Error('page 2 failed');
    }
    const got: number[] = [];
    await expect(
      (async () => {
        for await (const v of prefetch(source())) {
          await new Promise((r) => setTimeout(r, 10));
          got.push(v);
        }
      })(),
    ).rejects.toThrow('page 2 failed');
    expect(got).toEqual([1]);
  });
});

describe('sinks from SYNC_SINKS', () => {
  const secrets = { get: async () => 'whsec_eA==' };
  const service = () => ({ getContainerClient: () => ({}) }) as never;
  it('builds each named sink, several as one, and names every bad entry', () => {
    const config = loadConfig({});
    expect(sinksFor('dir:/tmp/x', { config, secrets })).toBeInstanceOf(DirectorySink);
    const withStorage = loadConfig({ AzureWebJobsStorage: 'UseDevelopmentStorage=true' });
    expect(
      sinksFor('blob', { config: withStorage, secrets, clients: { blobService: service } }),
    ).toBeInstanceOf(BlobSink);
    const both = sinksFor('blob, webhook', {
      config: loadConfig({
        AzureWebJobsStorage: 'UseDevelopmentStorage=true',
        DOWNSTREAM_WEBHOOK_URL: 'https://example.org/h',
      }),
      secrets,
      clients: { blobService: service },
    });
    expect(both).toBeInstanceOf(MultiSink);
    expect(both.description).toBe('blob container sync-changes + webhook https://example.org');
    let err: unknown;
    try {
      sinksFor('webhook,ftp:x,blob', { config, secrets });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).problems).toEqual([
      'SYNC_SINKS: the webhook sink needs DOWNSTREAM_WEBHOOK_URL',
      'SYNC_SINKS: unknown sink "ftp:x"; use blob, webhook, postgres, delta[:PATH] or dir:PATH, comma-separated',
      'SYNC_SINKS: the blob sink needs storage (AzureWebJobsStorage)',
    ]);
  });
});

describe('webhook sink', () => {
  const secret = `whsec_${Buffer.from('a-32-byte-secret-for-unit-tests!').toString('base64')}`;
  const receiver = async (answers: number[]) => {
    const got: Array<{ headers: Record<string, string>; body: string; status: number }> = [];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        const status = answers.shift() ?? 204;
        got.push({ headers: req.headers as Record<string, string>, body, status });
        res.writeHead(status).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/in`;
    return { url, got, close: () => new Promise<void>((r) => server.close(() => r())) };
  };
  const batch = {
    tenant: 'acme',
    runId: 'r1',
    stream: 'users',
    page: 3,
    changes: [{ changeId: 'c1', stream: 'users', kind: 'created' as const, id: 'u1', record: { id: 'u1' } }],
  };
  const fast = { maxAttempts: 4, baseDelayMs: 1, maxDelayMs: 5 };

  it('signs each attempt (verifiable with standardwebhooks) and keeps the webhook-id across retries', async () => {
    const r = await receiver([503, 500]);
    const sink = new WebhookSink(r.url, {
      secret: async () => secret,
      retry: fast,
      clock: new OffsetClock(),
    });
    await sink.write(batch);
    expect(r.got.map((g) => g.status)).toEqual([503, 500, 204]);
    expect(new Set(r.got.map((g) => g.headers['webhook-id'])).size).toBe(1);
    const payload = new Webhook(secret).verify(r.got[2].body, r.got[2].headers) as {
      type: string;
      data: unknown;
    };
    expect(payload).toMatchObject({ type: 'sync.changes', data: { runId: 'r1', stream: 'users', page: 3 } });
    // The same page in a resumed run: the same id, so the receiver can drop it.
    await sink.write(batch);
    expect(r.got[3].headers['webhook-id']).toBe(r.got[0].headers['webhook-id']);
    await r.close();
  });

  it('a 4xx is permanent: no retry, an error naming what to check and never the secret', async () => {
    const r = await receiver([401]);
    const sink = new WebhookSink(r.url, { secret: async () => secret, retry: fast });
    const err = await sink.write(batch).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UpstreamError);
    expect((err as UpstreamError).code).toBe('upstream_rejected');
    expect((err as Error).message).toContain('DOWNSTREAM_WEBHOOK_URL');
    expect((err as Error).message).not.toContain(secret);
    expect(r.got).toHaveLength(1);
    await r.close();
  });

  it('a receiver that stays down fails after the retry budget, saying the page will be sent again', async () => {
    const r = await receiver([503, 503, 503, 503, 503]);
    const sink = new WebhookSink(r.url, { secret: async () => secret, retry: fast });
    await expect(sink.write(batch)).rejects.toThrow(/answered 503 4 times; the page will be sent again/);
    expect(r.got).toHaveLength(4);
    await r.close();
  });
});
