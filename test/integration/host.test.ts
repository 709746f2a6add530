import { eventually, FIXTURE_APP, hostFixture } from '../helpers/host';

jest.setTimeout(60_000);

type Host = Awaited<ReturnType<typeof hostFixture>>;
let host: Host;
beforeAll(async () => {
  host = await hostFixture({
    app: FIXTURE_APP,
    env: { TICKER_SCHEDULE: '0 */5 * * * *', SLOW_TIMER_MS: '1500' },
  });
});
afterAll(() => host?.close());

const json = async (res: Response) => ({
  status: res.status,
  body: res.status === 204 ? undefined : await res.json().catch(() => undefined),
});

describe('HTTP triggers', () => {
  it('a function-level route needs its key (query code or x-functions-key)', async () => {
    expect((await host.fetch('/api/echo/1')).status).toBe(401);
    expect((await host.fetch('/api/echo/1?code=wrong')).status).toBe(401);
    const ok = await json(
      await host.fetch(`/api/echo/1?q=x&code=${host.keys.function}`, { method: 'POST', body: 'hello' }),
    );
    expect(ok).toEqual({ status: 200, body: { method: 'POST', id: '1', q: 'x', body: 'hello' } });
    const header = await host.fetch('/api/echo', { headers: { 'x-functions-key': host.keys.function } });
    expect((await header.json()).id).toBeNull();
    // The master key opens every level.
    expect((await host.fetch(`/api/echo?code=${host.keys.master}`)).status).toBe(200);
  });

  it('anonymous needs nothing; admin needs the master key, not a function key', async () => {
    expect(await (await host.fetch('/api/open')).text()).toBe('anyone');
    expect((await host.fetch(`/api/owner-only?code=${host.keys.function}`)).status).toBe(401);
    expect((await host.fetch(`/api/owner-only?code=${host.keys.master}`)).status).toBe(200);
  });

  it('declared methods are enforced; unknown routes are 404', async () => {
    expect((await host.fetch('/api/open', { method: 'DELETE' })).status).toBe(405);
    expect((await host.fetch('/api/nowhere')).status).toBe(404);
  });

  it('a function that throws gives a bare 500, no detail, and the host keeps serving', async () => {
    const res = await host.fetch('/api/boom');
    expect(res.status).toBe(500);
    expect(await res.text()).not.toContain('secret detail');
    expect((await host.fetch('/api/open')).status).toBe(200);
  });

  it('host admin routes need the master key', async () => {
    expect((await host.fetch('/admin/host/status')).status).toBe(401);
    expect((await host.fetch(`/admin/host/status?code=${host.keys.function}`)).status).toBe(401);
  });
});

describe('timer triggers', () => {
  it('fire on their NCRONTAB schedule (host clock) and never overlap', async () => {
    const timer = async () =>
      (
        (await host.status()).timers as Array<{
          name: string;
          runs: number;
          skipped: number;
          running: boolean;
        }>
      ).find((t) => t.name === 'ticker')!;
    const before = await timer();
    expect(before.runs).toBe(0);
    await host.advance(300);
    await eventually(async () => (await timer()).running, 'the first run to start');
    // The next occurrence comes due while the first run (1.5 s) is still going: skipped, not overlapped.
    await host.advance(300);
    await eventually(async () => (await timer()).skipped === 1, 'the overlapping tick to be skipped');
    await eventually(async () => !(await timer()).running, 'the first run to end');
    expect((await (await host.fetch('/api/ticks')).json()).ticks).toBe(1);
    expect((await timer()).runs).toBe(1);
  });
});

describe('durable orchestrations through the real libraries', () => {
  const instance = (id: string) =>
    host
      .fetch(`/runtime/webhooks/durabletask/instances/${id}?code=${host.keys.system}`)
      .then((r) => r.json());

  it('activity, timer, custom status and external event — surviving a host restart in the middle', async () => {
    const start = await host.fetch(`/api/workflow?code=${host.keys.function}`, {
      method: 'POST',
      body: JSON.stringify({ n: 21, timerSeconds: 3600 }),
    });
    expect(start.status).toBe(202);
    expect(start.headers.get('retry-after')).toBe('10');
    const links = await start.json();
    await eventually(
      async () => (await instance(links.id)).customStatus?.stage === 'waiting-timer',
      'the activity and the timer',
    );
    expect((await instance(links.id)).customStatus).toEqual({ stage: 'waiting-timer', doubled: 42 });

    await host.restart();

    expect((await instance(links.id)).runtimeStatus).toBe('Running');
    await host.advance(3600);
    await eventually(
      async () => (await instance(links.id)).customStatus?.stage === 'waiting-event',
      'the timer to fire after the restart',
    );
    const raise = await host.fetch(`/api/ops/${links.id}/raise?code=${host.keys.function}`, {
      method: 'POST',
      body: JSON.stringify({ by: 'test' }),
    });
    expect(raise.status).toBe(202);
    const done = await eventually(async () => {
      const s = await instance(links.id);
      return s.runtimeStatus === 'Completed' && s;
    }, 'completion');
    expect(done.output).toMatchObject({ doubled: 42, approval: { by: 'test' }, both: [84, 2] });
    // The orchestrator's clock is the durable one: after the 1 h timer, not the wall clock.
    expect(Date.parse(done.output.at) - Date.parse(done.createdTime)).toBeGreaterThanOrEqual(3600_000);
  });

  it('createCheckStatusResponse URLs work against the local host', async () => {
    const links = await (
      await host.fetch(`/api/workflow?code=${host.keys.function}`, {
        method: 'POST',
        body: JSON.stringify({ n: 1, timerSeconds: 1 }),
      })
    ).json();
    expect(links.statusQueryGetUri.startsWith(host.line.url)).toBe(true);
    const status = await fetch(links.statusQueryGetUri);
    expect(status.status).toBe(202);
    expect((await status.json()).instanceId).toBe(links.id);
    await host.advance(1);
    await eventually(
      async () =>
        (await (await fetch(links.statusQueryGetUri)).json()).customStatus?.stage === 'waiting-event',
      'waiting for the event',
    );
    const sent = await fetch(links.sendEventPostUri.replace('{eventName}', 'approve'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '"yes"',
    });
    expect(sent.status).toBe(202);
    const done = await eventually(async () => {
      const r = await fetch(links.statusQueryGetUri);
      return r.status === 200 && r.json();
    }, 'completion via the management URLs');
    expect(done.output.approval).toBe('yes');
    // Without the system key the management API refuses.
    expect((await fetch(links.statusQueryGetUri.replace(/&code=[^&]+/, ''))).status).toBe(401);
  });

  it('terminate through the durable client ends a waiting instance', async () => {
    const links = await (
      await host.fetch(`/api/workflow?code=${host.keys.function}`, {
        method: 'POST',
        body: JSON.stringify({ n: 2, timerSeconds: 999 }),
      })
    ).json();
    await eventually(
      async () => (await instance(links.id)).customStatus?.stage === 'waiting-timer',
      'the timer',
    );
    expect(
      (await host.fetch(`/api/ops/${links.id}/terminate?code=${host.keys.function}`, { method: 'POST' }))
        .status,
    ).toBe(202);
    const s = await eventually(async () => {
      const v = await instance(links.id);
      return v.runtimeStatus === 'Terminated' && v;
    }, 'termination');
    expect(s.output).toBe('stopped by test');
    await host.advance(999);
    await new Promise((r) => setTimeout(r, 200));
    expect((await instance(links.id)).runtimeStatus).toBe('Terminated');
  });

  it('continueAsNew restarts with new input until done', async () => {
    const res = await host.fetch(
      `/runtime/webhooks/durabletask/orchestrators/counter/counter-1?code=${host.keys.system}`,
      { method: 'POST', body: '0' },
    );
    expect(res.status).toBe(202);
    const s = await eventually(async () => {
      const v = await instance('counter-1');
      return v.runtimeStatus === 'Completed' && v;
    }, 'the counter');
    expect(s.output).toBe(3);
    expect(s.input).toBe(3);
  });

  it('an activity failure is catchable; an uncaught one fails the orchestration with its message', async () => {
    await host.fetch(
      `/runtime/webhooks/durabletask/orchestrators/failing/failing-1?code=${host.keys.system}`,
      { method: 'POST', body: '' },
    );
    const s = await eventually(async () => {
      const v = await instance('failing-1');
      return v.runtimeStatus === 'Failed' && v;
    }, 'the failure');
    expect(s.customStatus).toEqual({ caught: expect.stringContaining('activity failed on purpose') });
    expect(String(s.output)).toContain('activity failed on purpose');
  });

  it('starting an instance id that is running is 409; an unknown orchestrator is 404', async () => {
    await host.fetch(`/runtime/webhooks/durabletask/orchestrators/workflow/dup-1?code=${host.keys.system}`, {
      method: 'POST',
      body: '{"n":1,"timerSeconds":999}',
    });
    const again = await host.fetch(
      `/runtime/webhooks/durabletask/orchestrators/workflow/dup-1?code=${host.keys.system}`,
      { method: 'POST', body: '{"n":1,"timerSeconds":999}' },
    );
    expect(again.status).toBe(409);
    expect(
      (
        await host.fetch(`/runtime/webhooks/durabletask/orchestrators/nope?code=${host.keys.system}`, {
          method: 'POST',
        })
      ).status,
    ).toBe(404);
  });
});
