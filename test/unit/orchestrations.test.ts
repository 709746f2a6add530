import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { DEVICE_LOGIN } from '../../shared/device-login/orchestration';
import { EXPORT } from '../../shared/exports/orchestration';
import { SYNC } from '../../shared/sync/orchestration';
import { ScriptedOrchestration } from '../helpers/orchestration';

// The Functions worker's core module is the one thing that cannot exist here: the local host's stand-in records
// every registration, so the orchestrators run exactly as the app registers them.
jest.mock('@azure/functions-core', () => jest.requireActual('../../devhost/functions-core').functionsCore, {
  virtual: true,
});
const { registrations, triggerOf } = jest.requireActual(
  '../../devhost/functions-core',
) as typeof import('../../devhost/functions-core');

beforeAll(() => {
  const dir = join(__dirname, '..', '..', 'functions');
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.ts'))) require(join(dir, file));
});

const orchestration = (name: string, input: unknown = {}) =>
  new ScriptedOrchestration(registrations, name, input);
const triggerType = (name: string) => {
  const reg = registrations.get(name);
  return reg && triggerOf(reg.metadata).type;
};

describe('registrations', () => {
  it('every orchestration and activity an orchestrator calls is registered under the name it calls', () => {
    const expected: Array<[string, string]> = [
      [SYNC.orchestrator, 'orchestrationTrigger'],
      [SYNC.begin, 'activityTrigger'],
      [SYNC.slice, 'activityTrigger'],
      [SYNC.finish, 'activityTrigger'],
      [SYNC.fail, 'activityTrigger'],
      [EXPORT.orchestrator, 'orchestrationTrigger'],
      [EXPORT.stream, 'activityTrigger'],
      [EXPORT.finish, 'activityTrigger'],
      [EXPORT.fail, 'activityTrigger'],
      [EXPORT.notify, 'activityTrigger'],
      [DEVICE_LOGIN.orchestrator, 'orchestrationTrigger'],
      [DEVICE_LOGIN.requestCode, 'activityTrigger'],
      [DEVICE_LOGIN.poll, 'activityTrigger'],
      [DEVICE_LOGIN.forget, 'activityTrigger'],
    ];
    expect(expected.map(([name]) => [name, triggerType(name)])).toEqual(expected);
  });
});

const counts = (read: number) => ({ read, created: read, updated: 0, deleted: 0, unchanged: 0 });
const slice = (stream: string, done: boolean, read: number, durationMs = 10) => ({
  stream,
  ok: true,
  done,
  counts: counts(read),
  durationMs,
});

describe('sync orchestration', () => {
  const plan = {
    runId: 'r1',
    startedAt: '2026-11-23T12:00:00.000Z',
    full: false,
    resumed: false,
    trigger: 'schedule',
    streams: ['a', 'b', 'c', 'd'],
    concurrency: 2,
  };

  it('plans, runs slices a wave at a time (a stream not done is called again), then finishes, replaying each step', async () => {
    const o = orchestration(SYNC.orchestrator, { trigger: 'schedule' });
    let e = await o.run();
    expect(e.scheduled.map((s) => s.name)).toEqual([SYNC.begin]);
    // A new run's id and start come from the orchestration (the same on every replay).
    expect(e.scheduled[0].input).toEqual({
      trigger: 'schedule',
      full: false,
      fullPass: false,
      runId: expect.stringMatching(/^2026-11-23T12-00-00-000Z-[0-9a-f]{8}$/),
      startedAt: '2026-11-23T12:00:00.000Z',
    });
    o.complete(SYNC.begin, plan);
    e = await o.run();
    expect(e.scheduled.map((s) => (s.input as { stream: string }).stream)).toEqual(['a', 'b']);
    expect(e.customStatus).toMatchObject({
      runId: 'r1',
      state: 'running',
      streams: { a: { state: 'running' }, b: { state: 'running' }, c: { state: 'waiting' } },
    });
    // `b` hands back at its slice's deadline: it is called again, with `c`.
    o.complete(e.scheduled[0].id, slice('a', true, 100)).complete(e.scheduled[1].id, slice('b', false, 40));
    e = await o.run();
    expect(e.scheduled.map((s) => (s.input as { stream: string }).stream)).toEqual(['b', 'c']);
    o.complete(e.scheduled[0].id, slice('b', true, 90, 25)).complete(e.scheduled[1].id, slice('c', true, 5));
    e = await o.run();
    expect(e.scheduled.map((s) => (s.input as { stream: string }).stream)).toEqual(['d']);
    o.complete(e.scheduled[0].id, slice('d', true, 7));
    e = await o.run();
    expect(e.scheduled.map((s) => s.name)).toEqual([SYNC.finish]);
    const finish = e.scheduled[0].input as {
      results: Array<{ stream: string; durationMs: number }>;
      trigger: string;
    };
    expect(finish.results.map((r) => r.stream)).toEqual(['a', 'b', 'c', 'd']);
    // A stream's time is the sum of its slices'.
    expect(finish.results[1].durationMs).toBe(35);
    expect(finish.trigger).toBe('schedule');
    o.complete(SYNC.finish, { ok: true, runId: 'r1' });
    e = await o.run();
    expect(e.done).toBe(true);
    expect(e.output).toMatchObject({ state: 'completed', streams: { d: { state: 'done' } } });
    // Activity inputs are stored in history: never anything but names, ids and counts.
    expect(JSON.stringify(o.calls)).not.toMatch(/token|secret|password/i);
  });

  it('a resumed run says so to finish; a stream that fails is not called again', async () => {
    const o = orchestration(SYNC.orchestrator, {});
    await o.run();
    o.complete(SYNC.begin, { ...plan, resumed: true, streams: ['a', 'b'] });
    let e = await o.run();
    o.complete(e.scheduled[0].id, {
      ...slice('a', false, 1),
      ok: false,
      error: 'boom',
      errorCode: 'graphql_errors',
    });
    o.complete(e.scheduled[1].id, slice('b', true, 2));
    e = await o.run();
    expect(e.scheduled.map((s) => s.name)).toEqual([SYNC.finish]);
    expect((e.scheduled[0].input as { trigger: string }).trigger).toBe('resumed');
    o.complete(SYNC.finish, { ok: false, runId: 'r1' });
    e = await o.run();
    expect(e.output).toMatchObject({ state: 'failed', streams: { a: { state: 'failed', error: 'boom' } } });
  });

  it('a child stream waits for its parent’s last slice, and fails without a call when its parent failed', async () => {
    const parents = { streams: ['p', 'c', 'q', 'd'], parents: { c: 'p', d: 'q' }, concurrency: 3 };
    const o = orchestration(SYNC.orchestrator, {});
    await o.run();
    o.complete(SYNC.begin, { ...plan, ...parents });
    let e = await o.run();
    // The children wait: only the parents are called.
    expect(e.scheduled.map((s) => (s.input as { stream: string }).stream)).toEqual(['p', 'q']);
    o.complete(e.scheduled[0].id, slice('p', false, 10)).complete(e.scheduled[1].id, {
      ...slice('q', false, 1),
      ok: false,
      error: 'boom',
      errorCode: 'graphql_errors',
    });
    e = await o.run();
    // p is not done yet: c still waits; q failed: d fails by name, never called.
    expect(e.scheduled.map((s) => (s.input as { stream: string }).stream)).toEqual(['p']);
    o.complete(e.scheduled[0].id, slice('p', true, 20));
    e = await o.run();
    expect(e.scheduled.map((s) => (s.input as { stream: string }).stream)).toEqual(['c']);
    o.complete(e.scheduled[0].id, slice('c', true, 3));
    e = await o.run();
    const finish = e.scheduled[0].input as { results: Array<{ stream: string; errorCode?: string }> };
    expect(finish.results.map((r) => [r.stream, r.errorCode])).toEqual([
      ['p', undefined],
      ['c', undefined],
      ['q', 'graphql_errors'],
      ['d', 'parent_unavailable'],
    ]);
    expect(o.calls.filter((c) => (c.input as { stream?: string }).stream === 'd')).toEqual([]);
  });

  it('whatever fails — begin (named or thrown), a slice, finish, or the orchestration’s own code — ends in `fail`', async () => {
    const failedWith = async (o: ScriptedOrchestration) => {
      const e = await o.run();
      expect(e.scheduled.map((s) => s.name)).toEqual([SYNC.fail]);
      const input = e.scheduled[0].input as {
        run: { runId: string };
        error: { code: string; message: string };
      };
      o.complete(SYNC.fail);
      const end = await o.run();
      expect(end.done).toBe(true);
      expect(end.output).toMatchObject({ state: 'failed', error: input.error.message });
      return input;
    };
    // begin named the failure: its code reaches the run history.
    const named = orchestration(SYNC.orchestrator, {});
    await named.run();
    named.complete(SYNC.begin, { failed: { code: 'secret_not_found', message: 'Secret "x" is not in …' } });
    expect((await failedWith(named)).error).toEqual({
      code: 'secret_not_found',
      message: 'Secret "x" is not in …',
    });
    // begin threw: recorded as unexpected, under the id the orchestration gave the run.
    const thrown = orchestration(SYNC.orchestrator, {});
    const first = await thrown.run();
    thrown.fail(SYNC.begin, 'storage is down');
    const t = await failedWith(thrown);
    expect(t.error).toEqual({ code: 'unexpected', message: 'storage is down' });
    expect(t.run.runId).toBe((first.scheduled[0].input as { runId: string }).runId);
    // A slice threw: the plan's run id, and the streams done so far.
    const sliced = orchestration(SYNC.orchestrator, {});
    await sliced.run();
    sliced.complete(SYNC.begin, { ...plan, streams: ['a'] });
    let e = await sliced.run();
    sliced.fail(e.scheduled[0].id, 'the slice crashed');
    expect(await failedWith(sliced)).toMatchObject({
      run: { runId: 'r1' },
      error: { message: 'the slice crashed' },
    });
    // finish threw.
    const finished = orchestration(SYNC.orchestrator, {});
    await finished.run();
    finished.complete(SYNC.begin, { ...plan, streams: ['a'] });
    e = await finished.run();
    finished.complete(e.scheduled[0].id, slice('a', true, 3));
    await finished.run();
    finished.fail(SYNC.finish, 'manifest blob refused');
    expect(await failedWith(finished)).toMatchObject({
      results: [{ stream: 'a' }],
      error: { message: 'manifest blob refused' },
    });
    // The orchestration's own code threw on a plan it cannot read.
    const broken = orchestration(SYNC.orchestrator, {});
    await broken.run();
    broken.complete(SYNC.begin, { ...plan, streams: null });
    expect((await failedWith(broken)).error.code).toBe('unexpected');
  });

  it('a bad input fails the run the same way, before anything is read', async () => {
    const o = orchestration(SYNC.orchestrator, { full: 'yes' });
    const e = await o.run();
    expect(e.scheduled.map((s) => s.name)).toEqual([SYNC.fail]);
  });
});

describe('export orchestration', () => {
  const input = {
    id: '0b0c6f43-6d7e-4f11-9a7b-2a9f8d0e1c23',
    tenant: 'acme',
    streams: ['a', 'b', 'c', 'd'],
    format: 'csv',
    gzip: false,
    callbackUrl: 'https://hooks.example.org/in',
    requestedAt: '2026-11-23T12:00:00.000Z',
  };
  const file = (stream: string) => ({
    ok: true,
    file: { stream, name: `${input.id}/${stream}.csv`, records: 3, bytes: 30, sha256: 'ab' },
  });

  it('writes streams three at a time, finishes and calls back; a failed callback is reported, not fatal', async () => {
    const o = orchestration(EXPORT.orchestrator, input);
    let e = await o.run();
    expect(e.scheduled.map((s) => (s.input as { stream: string }).stream)).toEqual(['a', 'b', 'c']);
    for (const s of e.scheduled) o.complete(s.id, file((s.input as { stream: string }).stream));
    e = await o.run();
    expect(e.scheduled.map((s) => (s.input as { stream: string }).stream)).toEqual(['d']);
    o.complete(e.scheduled[0].id, file('d'));
    e = await o.run();
    expect(e.scheduled.map((s) => s.name)).toEqual([EXPORT.finish]);
    o.complete(EXPORT.finish, { manifest: `${input.id}/manifest.json` });
    e = await o.run();
    expect(e.scheduled.map((s) => s.name)).toEqual([EXPORT.notify]);
    expect(e.customStatus).toMatchObject({ status: 'completed', callback: { status: 'pending' } });
    o.fail(EXPORT.notify, 'callback https://hooks.example.org answered 410');
    e = await o.run();
    expect(e.done).toBe(true);
    expect(e.output).toMatchObject({
      status: 'completed',
      progress: { streamsDone: 4, streamsTotal: 4 },
      callback: { status: 'failed', error: expect.stringContaining('410') },
    });
  });

  it('a stream activity or finish that throws ends in `fail` (slot freed, run recorded), then the callback', async () => {
    const o = orchestration(EXPORT.orchestrator, input);
    let e = await o.run();
    for (const s of e.scheduled) o.complete(s.id, file((s.input as { stream: string }).stream));
    e = await o.run();
    o.fail(e.scheduled[0].id, 'blob storage answered 503');
    e = await o.run();
    expect(e.scheduled.map((s) => s.name)).toEqual([EXPORT.fail]);
    expect(e.scheduled[0].input).toMatchObject({
      error: expect.stringContaining('503'),
      outcomes: [{ ok: true }, { ok: true }, { ok: true }],
    });
    o.complete(EXPORT.fail);
    e = await o.run();
    expect(e.scheduled.map((s) => s.name)).toEqual([EXPORT.notify]);
    o.complete(EXPORT.notify);
    e = await o.run();
    expect(e.output).toMatchObject({ status: 'failed', callback: { status: 'delivered' } });
  });

  it('a failed stream stops the waves; the export fails naming it and still finishes (its slot is freed)', async () => {
    const o = orchestration(EXPORT.orchestrator, { ...input, callbackUrl: undefined });
    let e = await o.run();
    o.complete(e.scheduled[0].id, file('a'))
      .complete(e.scheduled[1].id, { ok: false, stream: 'b', error: 'HTTP 400' })
      .complete(e.scheduled[2].id, file('c'));
    e = await o.run();
    expect(e.scheduled.map((s) => s.name)).toEqual([EXPORT.finish]);
    o.complete(EXPORT.finish, {});
    e = await o.run();
    expect(e.output).toMatchObject({ status: 'failed', error: 'stream b: HTTP 400' });
  });
});

describe('device login orchestration', () => {
  const ticket = {
    userCode: 'ABCD-1234',
    verificationUri: 'https://idp.example.org/realms/acme/device',
    expiresInSeconds: 600,
    intervalSeconds: 5,
    handle: '0123456789abcdef0123456789abcdef',
  };

  it('waits an interval on a durable timer, polls, slows down by 5 s, and forgets the code when cancelled', async () => {
    const o = orchestration(DEVICE_LOGIN.orchestrator);
    const start = o.now;
    let e = await o.run();
    expect(e.scheduled.map((s) => s.name)).toEqual([DEVICE_LOGIN.requestCode]);
    const run = e.scheduled[0].input as { runId: string };
    expect(run).toEqual({
      runId: expect.stringMatching(/^login-/),
      startedAt: new Date(start).toISOString(),
    });
    o.complete(DEVICE_LOGIN.requestCode, ticket);
    e = await o.run();
    expect(e.scheduled).toEqual([
      expect.objectContaining({ kind: 'timer', fireAt: new Date(start + 5_000).toISOString() }),
    ]);
    expect(e.customStatus).toMatchObject({ state: 'waiting', userCode: 'ABCD-1234', intervalSeconds: 5 });
    o.fireTimer();
    e = await o.run();
    expect(e.scheduled).toEqual([
      expect.objectContaining({ name: DEVICE_LOGIN.poll, input: { ...run, handle: ticket.handle } }),
    ]);
    o.complete(DEVICE_LOGIN.poll, { outcome: { kind: 'error', error: 'slow_down' } });
    e = await o.run();
    expect(e.customStatus).toMatchObject({ state: 'waiting', intervalSeconds: 10, polls: 1 });
    expect(e.scheduled).toEqual([
      expect.objectContaining({ kind: 'timer', fireAt: new Date(o.now + 10_000).toISOString() }),
    ]);
    o.raise(DEVICE_LOGIN.cancelEvent);
    e = await o.run();
    expect(e.scheduled).toEqual([
      expect.objectContaining({
        name: DEVICE_LOGIN.forget,
        input: { ...run, handle: ticket.handle, view: { state: 'cancelled', polls: 1 } },
      }),
    ]);
    o.complete(DEVICE_LOGIN.forget);
    e = await o.run();
    expect(e.done).toBe(true);
    expect(e.output).toEqual({ state: 'cancelled', polls: 1 });
  });

  it('a token ends it authorised with who signed in; no device code or token is ever in its history', async () => {
    const o = orchestration(DEVICE_LOGIN.orchestrator);
    await o.run();
    o.complete(DEVICE_LOGIN.requestCode, ticket);
    await o.run();
    o.fireTimer();
    await o.run();
    o.complete(DEVICE_LOGIN.poll, { outcome: { kind: 'error', error: 'authorization_pending' } });
    await o.run();
    o.fireTimer();
    await o.run();
    o.complete(DEVICE_LOGIN.poll, {
      outcome: { kind: 'token' },
      person: { username: 'admin', name: 'Ada Admin' },
    });
    let e = await o.run();
    expect(e.scheduled.map((s) => s.name)).toEqual([DEVICE_LOGIN.forget]);
    o.complete(DEVICE_LOGIN.forget);
    e = await o.run();
    expect(e.output).toEqual({ state: 'authorised', username: 'admin', name: 'Ada Admin', polls: 2 });
    expect(JSON.stringify(o.calls)).not.toMatch(/device_code|access_token|refresh_token/);
  });

  it('expires when no login comes within the code’s lifetime, and a failed code request fails it', async () => {
    const o = orchestration(DEVICE_LOGIN.orchestrator);
    await o.run();
    o.complete(DEVICE_LOGIN.requestCode, { ...ticket, expiresInSeconds: 8, intervalSeconds: 5 });
    await o.run();
    o.fireTimer();
    await o.run();
    o.complete(DEVICE_LOGIN.poll, { outcome: { kind: 'error', error: 'authorization_pending' } });
    let e = await o.run();
    // The next poll would come after expiry: the timer is set for the expiry instead.
    expect(e.scheduled[0]).toMatchObject({
      kind: 'timer',
      fireAt: new Date(Date.parse('2026-11-23T12:00:08Z')).toISOString(),
    });
    o.fireTimer();
    e = await o.run();
    o.complete(DEVICE_LOGIN.forget);
    e = await o.run();
    expect(e.output).toEqual({ state: 'expired', polls: 1 });

    const f = orchestration(DEVICE_LOGIN.orchestrator);
    await f.run();
    f.fail(DEVICE_LOGIN.requestCode, 'device code request failed (HTTP 503)');
    e = await f.run();
    // It still ends in the run history, with no code to forget.
    expect(e.scheduled[0]).toMatchObject({ name: DEVICE_LOGIN.forget, input: { view: { state: 'failed' } } });
    expect((e.scheduled[0].input as { handle?: string }).handle).toBeUndefined();
    f.complete(DEVICE_LOGIN.forget);
    e = await f.run();
    expect(e.output).toMatchObject({ state: 'failed', error: expect.stringContaining('HTTP 503') });
  });
});
