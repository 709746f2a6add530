import { FEATURE_ROUTES } from '../../shared/app';
import { stackFixture, type Stack } from '../helpers/stack';
import { record } from './report';

/*
 * Every HTTP route of the app, on the local host, while storage refuses everything (the identity lost its role, the
 * account's firewall closed) and while it does not answer at all (stopped): each answers what it can without
 * storage, or a problem document — never the host's bare 500, an empty body or a stack trace.
 */
jest.setTimeout(240_000);

/** Every route, as each feature declares it with a request that reaches it; checked against the host's list. */
const ROUTES = FEATURE_ROUTES;

interface Answer {
  route: string;
  status: number;
  type: string;
  text: string;
  ms: number;
}

async function callAll(stack: Stack): Promise<Answer[]> {
  return Promise.all(
    ROUTES.map(async (r) => {
      const started = Date.now();
      const res = await stack.api(
        r.path,
        {
          method: r.method,
          ...(r.body
            ? { body: JSON.stringify(r.body), headers: { 'content-type': 'application/json' } }
            : {}),
        },
        r.key ? stack.keys[r.key] : null,
      );
      return {
        route: r.route,
        status: res.status,
        type: res.headers.get('content-type') ?? '',
        text: await res.text(),
        ms: Date.now() - started,
      };
    }),
  );
}

/** What a user would notice: a bare or unexplained failure. Empty when every answer is served or a problem. */
function badAnswers(answers: Answer[]): string[] {
  return answers.flatMap((a) => {
    const bad: string[] = [];
    if (/\n\s+at .+\(.+:\d+:\d+\)/.test(a.text)) bad.push('a stack trace');
    if (a.status >= 400) {
      if (!a.type.startsWith('application/problem+json')) bad.push(`${a.status} without a problem document`);
      else {
        const body = JSON.parse(a.text) as { code?: string; status?: number; detail?: string };
        if (!body.code || body.status !== a.status || !body.detail)
          bad.push(`an incomplete problem: ${a.text}`);
      }
    }
    return bad.map((b) => `${a.route}: ${b}`);
  });
}

let stack: Stack;
beforeAll(async () => {
  stack = await stackFixture({ storageFaults: true, sandbox: { records: 20 } });
}, 120_000);
afterAll(() => stack?.close());

describe('every route while storage is down', () => {
  it('the table of routes is every HTTP function the host serves', async () => {
    const status = await (await fetch(`${stack.url}/admin/host/status?code=${stack.keys.master}`)).json();
    const served = (status.functions as Array<{ trigger: string; route?: string }>)
      .filter((f) => f.trigger === 'httpTrigger')
      .map((f) => f.route?.replace(/^\/api\//, ''))
      .sort();
    expect(ROUTES.map((r) => r.route).sort()).toEqual(served);
  });

  it('storage refusing every request: each route answers what it can, or a problem document', async () => {
    for (const method of ['GET', 'HEAD', 'PUT', 'POST', 'PATCH', 'MERGE', 'DELETE'])
      stack.storage?.refuse({ method, path: /.*/ });
    try {
      const answers = await callAll(stack);
      const bad = badAnswers(answers);
      const failing = answers.filter((a) => a.status >= 500).map((a) => `${a.route} ${a.status}`);
      record({
        kind: 'fault',
        area: 'HTTP routes',
        fault: 'storage refuses every request (403)',
        expected: 'each route answers, or a problem document; never a bare 500 or a stack',
        observed: bad.length
          ? bad.join('; ')
          : `${answers.length} routes: ${answers.length - failing.length} answered, ${failing.length} a 5xx problem document`,
        ok: bad.length === 0,
      });
      expect(bad).toEqual([]);
      // Storage is where runs, exports, imports and the session live: those answer 503, retry.
      for (const route of ['manage/runs', 'exports/{id}', 'imports/{id}', 'manage/sync'])
        expect([route, answers.find((a) => a.route === route)?.status]).toEqual([route, 503]);
      const runs = JSON.parse(answers.find((a) => a.route === 'manage/runs')?.text ?? '{}');
      expect(runs).toMatchObject({ code: 'service_unavailable', detail: expect.stringMatching(/storage/i) });
      expect(answers.find((a) => a.route === 'health')?.status).toBeLessThan(500);
    } finally {
      stack.storage?.clear();
    }
  });

  it('storage not answering at all (stopped): the same, within the SDK’s retries', async () => {
    await stack.storage?.stop();
    try {
      const answers = await callAll(stack);
      const bad = badAnswers(answers);
      const slowest = Math.max(...answers.map((a) => a.ms));
      record({
        kind: 'fault',
        area: 'HTTP routes',
        fault: 'storage stopped (connections refused)',
        expected: 'each route answers, or a problem document; never a bare 500 or a stack',
        observed: bad.length
          ? bad.join('; ')
          : `${answers.length} routes answered; the slowest after ${Math.round(slowest / 1000)} s (the storage SDK's retries)`,
        ok: bad.length === 0,
      });
      expect(bad).toEqual([]);
      expect(answers.find((a) => a.route === 'manage/runs')?.status).toBe(503);
    } finally {
      await stack.storage?.start();
    }
  });
});
