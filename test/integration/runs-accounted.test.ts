import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { errorText } from '../../shared/errors';
import { ALERT_RECORDS } from '../../shared/log/alerts';
// Read through the API, which shows each kind's details: typed as the sync's (the kind these tests read most).
import type { SyncRunSummary as RunSummary } from '../../shared/sync/run-details';
import { eventually } from '../helpers/host';
import { stackFixture, type Stack } from '../helpers/stack';

/**
 * Every run that starts ends in the run history — whatever fails: begin (a bad setting, storage), finish
 * (storage), a terminated orchestration — with its error and the action that fixes it, the record its alert
 * counts, and on the status page; a resumed run keeps why it stopped. On the local host over real storage
 * (Azurite, behind a proxy that refuses chosen requests) and the sandbox; only the Functions host is stood in for.
 */
jest.setTimeout(180_000);

let stack: Stack;
let streamsFile: string;
beforeAll(async () => {
  stack = await stackFixture({ sandbox: { records: 40 }, storageFaults: true, env: {} });
  streamsFile = join(stack.dir, 'streams.json');
});
afterAll(() => stack?.close());

const list = async (kind: string) =>
  ((await stack.json(`manage/runs?kind=${kind}&limit=50`)).body as { runs: RunSummary[] }).runs;
const run = async (id: string) =>
  (await stack.json(`manage/runs/${encodeURIComponent(id)}`)).body as RunSummary;
const instance = async (id: string) => {
  const res = await fetch(
    `${stack.url}/runtime/webhooks/durabletask/instances/${id}?code=${stack.keys.system}`,
  );
  return res.status === 404
    ? undefined
    : ((await res.json()) as { runtimeStatus: string; customStatus?: { runId?: string } });
};
const idle = (id: string) =>
  eventually(
    async () => {
      const s = await instance(id);
      return (!s || ['Completed', 'Failed', 'Terminated'].includes(s.runtimeStatus)) && true;
    },
    `${id} to be idle`,
    90_000,
  );
/** The record an alert counts for this run, with every field its query reads. */
const alertRecord = (message: keyof typeof ALERT_RECORDS, runId: string) =>
  eventually(async () => {
    const record = stack.logRecords().find((l) => l.message === message && l.runId === runId);
    return record && ALERT_RECORDS[message].every((f) => record[f] !== undefined) && record;
  }, `the "${message}" record of ${runId}`);
const syncNow = async () => {
  const before = new Set((await list('sync')).map((r) => `${r.id}@${r.outcome}@${r.finishedAt}`));
  expect((await stack.json('manage/sync', { method: 'POST' })).status).toBe(202);
  await idle(`sync-${stack.sb.tenant}`);
  return eventually(async () => {
    const [latest] = await list('sync');
    return (
      latest &&
      latest.outcome !== 'running' &&
      !before.has(`${latest.id}@${latest.outcome}@${latest.finishedAt}`) &&
      latest
    );
  }, 'the sync to end in the history');
};

describe('instance status for starters', () => {
  it('no such instance is read from the durable API’s 404; any other failure is an error naming its status', async () => {
    const { readInstance } = await import('../../shared/durable');
    const client = (key: string) =>
      ({
        clientData: { rpcBaseUrl: `${stack.url}/_rpc/${key}/durabletask/` },
      }) as unknown as import('durable-functions').DurableClient;
    expect(await readInstance(client(stack.keys.system), 'no-such-instance-404')).toBeUndefined();
    // An id that merely contains "404" is looked up like any other (the old check read "404" in any message).
    expect(await readInstance(client(stack.keys.system), 'export-404')).toBeUndefined();
    await expect(readInstance(client('wrong-key'), 'sync-acme')).rejects.toThrow(/answered HTTP 401/);
  });
});

describe('every run accounted for', () => {
  it('begin refused by storage: the run is failed in the history with the action, and its alert record', async () => {
    stack.storage?.refuse({ method: 'PUT', path: /\/sync-state\/acme\/run\.json$/, times: 1 });
    const failed = await syncNow();
    expect(failed).toMatchObject({
      outcome: 'failed',
      error: { code: 'storage_unavailable', action: errorText('storage_unavailable').action },
    });
    expect(stack.storage?.refused).toEqual(
      expect.arrayContaining([expect.stringMatching(/PUT .*run\.json/)]),
    );
    expect(await alertRecord('sync run failed', failed.id)).toMatchObject({ code: 'storage_unavailable' });
  });

  it('a blob sink file past Blob Storage’s block limit: failed with the action that fixes it (the page size), not a storage outage', async () => {
    // What Blob Storage answers a block list of more than 50 000 blocks; the blob sink stages one per page with changes.
    await stack.sb.hook('data/mutate', { collection: 'controls', creates: 0, updates: 5, deletes: 0 });
    stack.storage?.refuse({
      method: 'PUT',
      path: /\/sync-changes\/acme\/[^/]+\/\w+\.ndjson\.gz$/,
      body: /<BlockList>/,
      status: 400,
      code: 'BlockListTooLong',
      times: 1,
    });
    const failed = await syncNow();
    expect(failed).toMatchObject({
      outcome: 'failed',
      error: { code: 'storage_block_limit', action: errorText('storage_block_limit').action },
    });
    expect(failed.error?.action).toMatch(/pageSize/);
    expect(await alertRecord('sync run failed', failed.id)).toMatchObject({ code: 'storage_block_limit' });
    // Refused once here; a real file that long would be refused again until the page size is raised.
    expect(await syncNow()).toMatchObject({ id: failed.id, trigger: 'resumed', outcome: 'succeeded' });
  });

  it('finish refused by storage: failed with the action; the next run resumes it and keeps why it stopped', async () => {
    stack.storage?.refuse({ method: 'DELETE', path: /\/sync-state\/acme\/\w+\.checkpoint$/, times: 1 });
    const failed = await syncNow();
    expect(failed).toMatchObject({ outcome: 'failed', error: { code: 'storage_unavailable' } });
    await alertRecord('sync run failed', failed.id);
    const resumed = await syncNow();
    expect(resumed).toMatchObject({
      id: failed.id,
      trigger: 'resumed',
      outcome: 'succeeded',
      interruptions: [{ code: 'storage_unavailable', message: failed.error?.message.slice(0, 500) }],
    });
  });

  it('a terminated sync is accounted for before the next starts; the resumed run says it was stopped', async () => {
    await stack.sb.hook('data/mutate', { collection: 'controls', creates: 0, updates: 40, deletes: 0 });
    await stack.sb.hook('faults', { route: 'graphql', delayMs: 1500, count: 4 });
    expect((await stack.json('manage/sync', { method: 'POST' })).status).toBe(202);
    const id = `sync-${stack.sb.tenant}`;
    const runId = await eventually(async () => {
      const s = await instance(id);
      return s?.runtimeStatus === 'Running' && s.customStatus?.runId;
    }, 'the run to be running');
    const res = await fetch(
      `${stack.url}/runtime/webhooks/durabletask/instances/${id}/terminate?reason=operator&code=${stack.keys.system}`,
      { method: 'POST' },
    );
    expect(res.status).toBe(202);
    await idle(id);
    // The run stopped without ending: until the next start it is "running" in the history…
    expect((await run(runId)).outcome).toBe('running');
    // (the sweep leaves runs younger than a minute alone: their instance may not have reported yet)
    await stack.advance(120);
    const resumed = await syncNow();
    // …then it is accounted for (failed, its alert record logged) and resumed under its id.
    expect(await alertRecord('sync run failed', runId)).toMatchObject({ code: 'run_stopped' });
    expect(resumed).toMatchObject({
      id: runId,
      outcome: 'succeeded',
      interruptions: [{ code: 'run_stopped', message: expect.stringMatching(/terminated/) }],
    });
    const page = await (await stack.api(`manage/status?code=${stack.keys.master}`)).text();
    expect(page).toMatch(/Resumed after it stopped once/);
    expect(page).toContain('run_stopped');
    // And a running one reads as such through the same status call starters use.
    const { readInstance } = await import('../../shared/durable');
    const client = { clientData: { rpcBaseUrl: `${stack.url}/_rpc/${stack.keys.system}/durabletask/` } };
    expect((await readInstance(client as never, id))?.customStatus).toMatchObject({ runId });
  });

  it('begin refused for a bad streams file names the setting; fixing it lets the next run start', async () => {
    // A file read when the sync is first set up in this process: restart the host with the setting named.
    await writeFile(streamsFile, '{ not json');
    await stack.restart({ env: { SYNC_STREAMS_FILE: streamsFile } });
    const failed = await syncNow();
    expect(failed).toMatchObject({
      outcome: 'failed',
      error: {
        code: 'config_invalid',
        message: expect.stringContaining(streamsFile),
        action: errorText('config_invalid').action,
      },
    });
    await writeFile(
      streamsFile,
      JSON.stringify({ streams: [] }).replace(
        '[]',
        '[{"name":"users","document":"query U($first: Int, $after: String) { users(first: $first, after: $after) { edges { node { id name } } pageInfo { hasNextPage endCursor } } }","paths":{"records":"users.edges","node":"node","hasNextPage":"users.pageInfo.hasNextPage","endCursor":"users.pageInfo.endCursor"}}]',
      ),
    );
    const ok = await syncNow();
    expect(ok.outcome).toBe('succeeded');
    expect(ok.id).not.toBe(failed.id);
    await stack.restart({ env: {} });
  });

  it('an error that repeats a 20 000-character literal: the run is failed in the history with bounded texts; a summary storage still refuses is replaced by the least it must say', async () => {
    // The tenant's GraphQL server repeats the unknown field's name in its error, at whatever length it is.
    const field = `f${'x'.repeat(20_000)}`;
    await writeFile(
      streamsFile,
      JSON.stringify({
        streams: [
          {
            name: 'users',
            document: `query U($first: Int, $after: String) { users(first: $first, after: $after) { edges { node { id ${field} } } pageInfo { hasNextPage endCursor } } }`,
            paths: {
              records: 'users.edges',
              node: 'node',
              hasNextPage: 'users.pageInfo.hasNextPage',
              endCursor: 'users.pageInfo.endCursor',
            },
          },
        ],
      }),
    );
    await stack.restart({ env: { SYNC_STREAMS_FILE: streamsFile } });
    try {
      const failed = await syncNow();
      expect(failed).toMatchObject({
        outcome: 'failed',
        error: { code: expect.any(String), action: expect.any(String) },
        // The schema says the field is gone before anything is read: the stream is blocked, naming it.
        streams: {
          users: { errorCode: 'schema_drift', error: expect.stringContaining('no longer has fxxx') },
        },
      });
      expect(failed.error?.code).not.toBe('unexpected');
      expect(failed.error?.message.length).toBeLessThanOrEqual(2_000);
      expect(failed.streams.users.error?.length).toBeLessThanOrEqual(500);
      const page = await (await stack.api(`manage/status?code=${stack.keys.master}`)).text();
      expect(page).toContain(failed.id);
      expect(page).not.toContain(field);

      // The next run resumes it and fails the same way; this time storage refuses its whole summary once.
      stack.storage?.refuse({
        method: 'PUT',
        path: /\/runhistory\(/,
        body: /(?=[\s\S]*outcome\\":\\"failed)(?=[\s\S]*streams\\":\{\\")/,
        times: 1,
      });
      const again = await syncNow();
      expect(stack.storage?.refused).toEqual(
        expect.arrayContaining([expect.stringMatching(/PUT .*runhistory/)]),
      );
      expect(again).toEqual({
        id: failed.id,
        kind: 'sync',
        trigger: 'resumed',
        startedAt: expect.any(String),
        finishedAt: expect.any(String),
        durationMs: expect.any(Number),
        outcome: 'failed',
        streams: {},
        error: { code: failed.error?.code, message: expect.any(String), action: failed.error?.action },
      });
      expect(
        stack.logRecords().some((l) => l.message === 'run history not written' && l.runId === failed.id),
      ).toBe(true);
    } finally {
      await stack.restart({ env: {} });
    }
  });

  it('an export whose manifest is refused fails in the history with its error, and frees its slot', async () => {
    stack.storage?.refuse({ method: 'PUT', path: /\/exports\/[\w-]+\/manifest\.json$/, times: 1 });
    const post = () =>
      stack.json(
        'exports',
        {
          method: 'POST',
          body: JSON.stringify({ streams: ['users'] }),
          headers: { 'content-type': 'application/json' },
        },
        stack.keys.function,
      );
    const first = await post();
    expect(first.status).toBe(202);
    const state = await eventually(async () => {
      const s = await stack.json(`exports/${first.body.id}`, {}, stack.keys.function);
      return ['completed', 'failed'].includes(s.body.status) && s.body;
    }, 'the export to end');
    expect(state).toMatchObject({ status: 'failed', error: expect.stringMatching(/could not finish/) });
    expect(await run(first.body.id)).toMatchObject({
      kind: 'export',
      outcome: 'failed',
      error: { code: 'export_failed' },
    });
    await alertRecord('export failed', first.body.id);
    // Its slot is free again: another export is accepted.
    expect((await post()).status).toBe(202);
  });

  it('an Idempotency-Key is given back when storage fails before the export exists: a retry with it starts one', async () => {
    const body = JSON.stringify({ streams: ['users'], format: 'ndjson' });
    const post = () =>
      stack.json(
        'exports',
        {
          method: 'POST',
          body,
          headers: { 'content-type': 'application/json', 'idempotency-key': 'blip-1' },
        },
        stack.keys.function,
      );
    // The query of the tenant's export slots fails once (a storage blip), after the key was claimed.
    stack.storage?.refuse({ method: 'GET', path: /\/exportledger\(\)$/, times: 1 });
    const refused = await post();
    expect(refused.status).toBe(503);
    expect(refused.body).toMatchObject({ code: 'service_unavailable' });
    expect(stack.storage?.refused).toEqual(
      expect.arrayContaining([expect.stringMatching(/exportledger\(\)/)]),
    );
    // The retry with the same key is a new export, not 409 "still being started" for 24 hours.
    const retried = await post();
    expect(retried.status).toBe(202);
    const replayed = await post();
    expect([replayed.status, replayed.body.id]).toEqual([202, retried.body.id]);
  });

  it('a terminated export and a terminated device login are accounted for by the next start', async () => {
    await stack.sb.hook('faults', { route: 'graphql', delayMs: 3000, count: 2 });
    const exp = await stack.json(
      'exports',
      {
        method: 'POST',
        body: JSON.stringify({ streams: ['kpis'] }),
        headers: { 'content-type': 'application/json' },
      },
      stack.keys.function,
    );
    expect(exp.status).toBe(202);
    expect((await run(exp.body.id)).outcome).toBe('running');
    const login = await stack.json('manage/device-login?force=true', { method: 'POST' });
    expect(login.status).toBe(202);
    const terminate = (id: string) =>
      fetch(
        `${stack.url}/runtime/webhooks/durabletask/instances/${id}/terminate?reason=operator&code=${stack.keys.system}`,
        {
          method: 'POST',
        },
      );
    await terminate(`export-${exp.body.id}`);
    await terminate(login.body.id);
    await idle(`export-${exp.body.id}`);
    await idle(login.body.id);
    // The sweep leaves runs younger than a minute alone: move the host's clock past that.
    await stack.advance(120);
    await syncNow();
    expect(await run(exp.body.id)).toMatchObject({ outcome: 'failed', error: { code: 'run_stopped' } });
    await alertRecord('export failed', exp.body.id);
    expect(await run(login.body.runId)).toMatchObject({
      kind: 'login',
      outcome: 'failed',
      error: { code: 'run_stopped' },
    });
  });
});
