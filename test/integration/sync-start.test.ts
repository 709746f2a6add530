import { createServer, type Server } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DurableClient } from 'durable-functions';
import { loadConfig } from '../../shared/app';
import { createLogger } from '../../shared/log';
import { RunRecorder } from '../../shared/runs/recorder';
import type { RunHistory } from '../../shared/runs/history';
import type { RunSummary } from '../../shared/runs/summary';
import { SYNC_RUN, syncInstanceId } from '../../shared/sync/orchestration';
import { startSync, type SyncStartHost } from '../../shared/sync/routes';
import { eventually } from '../helpers/host';
import { stackFixture, type Stack } from '../helpers/stack';

/**
 * "Sync now" right after a run: the run history records a run's end in its last activity, and the orchestration
 * completes a moment later. A start in between is a start the history and the status page show as possible, so it
 * is accepted — on the real local host (the sandbox, Azurite, the app's own functions), and, for the states the local
 * host cannot be put in (an orchestration that does not complete), against a stand-in for the Durable extension's
 * HTTP API, which is what cannot exist here.
 */
jest.setTimeout(300_000);

const runs = async (stack: Stack) =>
  ((await stack.json('manage/runs?kind=sync&limit=1')).body as { runs: RunSummary[] }).runs;

describe('a start posted the moment the history records the end of a sync', () => {
  let stack: Stack;
  beforeAll(async () => {
    // Each activity's result reaches its orchestration 300 ms late, as a polled queue delivers it in Azure: the
    // moment between the history's "ended" and the orchestration's completion is then wide enough to land in.
    stack = await stackFixture({
      sandbox: { records: 5 },
      env: { SYNC_STREAMS: 'controls', HOST_QUEUE_LATENCY_MS: '300' },
    });
  });
  afterAll(() => stack?.close());

  it('is accepted (202) every time, 50 times in a row — never the 409 of the finishing orchestration', async () => {
    const answers: number[] = [];
    let finishing = 0;
    let previous: string | undefined;
    for (let i = 0; i < 50; i++) {
      const res = await stack.json('manage/sync', { method: 'POST' });
      answers.push(res.status);
      if (res.status !== 202) break;
      // Polls the history as a person's status page or a client would, and posts the moment it says "ended".
      const ended = await eventually(
        async () => {
          const [latest] = await runs(stack);
          return latest && latest.id !== previous && latest.outcome !== 'running' && latest;
        },
        `run ${i + 1} to end in the history`,
        60_000,
        5,
      );
      previous = ended.id;
      expect(ended.outcome).toBe('succeeded');
      // Whether its orchestration was still completing at that moment (the window this is about), for the figure.
      const instance = await fetch(
        `${stack.url}/runtime/webhooks/durabletask/instances/${syncInstanceId(stack.sb.tenant)}?code=${stack.keys.master}`,
      ).then((r) => r.json() as Promise<{ runtimeStatus: string }>);
      if (instance.runtimeStatus === 'Running') finishing++;
    }
    expect(answers).toEqual(Array<number>(50).fill(202));
    // The window was there to land in (the 409 of before).
    expect(finishing).toBeGreaterThan(25);
    console.log(
      `sync starts: 50 of 50 accepted; ${finishing} posted while the last run's orchestration was completing`,
    );
  });
});

/**
 * The Durable extension's instance API as the sync's start reads it, over a real socket, with an instance the test
 * controls; `terminate` ends it only when the test says the store would.
 */
async function fakeDurable(
  instance: { runtimeStatus: string; customStatus?: unknown },
  terminateEnds: boolean,
) {
  const server: Server = createServer((_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(
      JSON.stringify({
        name: 'syncRun',
        instanceId: 'sync-acme',
        createdTime: '2026-11-28T10:00:00Z',
        lastUpdatedTime: '2026-11-28T10:01:00Z',
        input: null,
        output: null,
        ...instance,
      }),
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const started: string[] = [];
  const terminated: string[] = [];
  const client = {
    clientData: { rpcBaseUrl: `http://127.0.0.1:${port}/` },
    startNew: async (_name: string, options: { instanceId: string }) => {
      started.push(options.instanceId);
      return options.instanceId;
    },
    terminate: async (id: string) => {
      terminated.push(id);
      if (terminateEnds) instance.runtimeStatus = 'Terminated';
    },
  } as unknown as DurableClient;
  return { client, started, terminated, close: () => new Promise((r) => server.close(r)) };
}

describe('a start while the last run’s orchestration is completing (a stand-in for the Durable extension)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ti-sync-start-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const ended: RunSummary = {
    id: 'run-1',
    kind: 'sync',
    trigger: 'manual',
    outcome: 'succeeded',
    startedAt: '2026-11-28T10:00:00.000Z',
    finishedAt: '2026-11-28T10:00:30.000Z',
    streams: {},
  } as RunSummary;

  function host(history: RunSummary[]): { app: SyncStartHost; logs: Array<{ message: string }> } {
    const logs: Array<{ message: string }> = [];
    const store: RunHistory = {
      record: async () => undefined,
      list: async () => history,
      get: async (id) => history.find((r) => r.id === id),
      purge: async () => 0,
    };
    const logger = createLogger((r) => logs.push(r));
    const clock = { now: () => Date.parse('2026-11-28T10:01:00Z') };
    const app = {
      config: loadConfig({ LOCAL_SECRETS_FILE: join(dir, `${Math.random()}`, 'secrets.json') }),
      logger,
      clock,
      access: () => ({ tenant: { name: 'acme' } }),
      runs: () => new RunRecorder(store, { logger, clock, retentionDays: 30 }),
      runKinds: { sync: SYNC_RUN },
      traced: (_name: string, _fields: unknown, work: () => Promise<unknown>) => work(),
    } as unknown as SyncStartHost;
    return { app, logs };
  }

  it('an instance whose run the history ended, that never completes: ended by the start, which then starts (202)', async () => {
    const durable = await fakeDurable({ runtimeStatus: 'Running', customStatus: { runId: 'run-1' } }, true);
    try {
      const { app, logs } = host([ended]);
      const res = await startSync(durable.client, app);
      expect(res.status).toBe(202);
      expect(durable.terminated).toEqual(['sync-acme']);
      expect(durable.started).toEqual(['sync-acme']);
      expect(logs.map((l) => l.message)).toContain('sync orchestration ended late');
    } finally {
      await durable.close();
    }
  });

  it('a run the history still shows running: 409 sync_running with Retry-After, nothing ended or started', async () => {
    const durable = await fakeDurable({ runtimeStatus: 'Running', customStatus: { runId: 'run-1' } }, true);
    try {
      const { app } = host([{ ...ended, outcome: 'running', finishedAt: undefined } as RunSummary]);
      const res = await startSync(durable.client, app);
      expect(res.status).toBe(409);
      expect(res.headers).toMatchObject({ 'retry-after': '10' });
      expect(res.jsonBody).toMatchObject({
        code: 'sync_running',
        retryAfterSeconds: 10,
        running: { runId: 'run-1' },
      });
      expect(durable.terminated).toEqual([]);
      expect(durable.started).toEqual([]);
    } finally {
      await durable.close();
    }
  });

  it('an instance still planning (no run id yet) is running: 409, never ended', async () => {
    const durable = await fakeDurable({ runtimeStatus: 'Running', customStatus: null }, true);
    try {
      const res = await startSync(durable.client, host([ended]).app);
      expect(res.status).toBe(409);
      expect(durable.terminated).toEqual([]);
    } finally {
      await durable.close();
    }
  });

  it('an ended run whose orchestration the store will not end: 503 service_unavailable, nothing started', async () => {
    const durable = await fakeDurable({ runtimeStatus: 'Running', customStatus: { runId: 'run-1' } }, false);
    try {
      await expect(startSync(durable.client, host([ended]).app)).rejects.toMatchObject({
        code: 'service_unavailable',
      });
      expect(durable.terminated).toEqual(['sync-acme']);
      expect(durable.started).toEqual([]);
    } finally {
      await durable.close();
    }
  });
});
