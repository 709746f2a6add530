import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, LookupFunction } from 'node:net';
import { OutcomeUnknown, UpstreamError } from '../../shared/errors';
import { TenantGraphqlClient } from '../../shared/graphql/client';
import { Pacer } from '../../shared/net/pacer';
import { fetchPost, neverSent, nodePost } from '../../shared/net/http';
import { failure } from '../helpers/failure';

/** The GraphQL client's transport against a local server that answers as each test says. */
let server: Server;
let url: string;
let handle: (req: IncomingMessage, body: string, res: ServerResponse) => void;
const connections: unknown[] = [];
beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => handle(req, body, res));
  });
  server.on('connection', (socket) => connections.push(socket));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));
beforeEach(() => (connections.length = 0));

describe('nodePost', () => {
  it('sends the body and headers, answers any status with its headers and text, and keeps the connection', async () => {
    handle = (req, body, res) => {
      res.writeHead(req.headers.authorization === 'Bearer t' ? 429 : 400, { 'retry-after': '7' });
      res.end(`échoed ${body}`);
    };
    for (let i = 0; i < 3; i++) {
      const answer = await nodePost(url, '{"q":1}', { headers: { authorization: 'Bearer t' } });
      expect(answer).toMatchObject({ status: 429, text: 'échoed {"q":1}' });
      expect(answer.header('Retry-After')).toBe('7');
      expect(answer.header('x-none')).toBeNull();
    }
    // Three requests, one TCP connection: kept alive between them.
    expect(connections).toHaveLength(1);
  });

  it('each URL reaches its own path and query, and a user and password in it become basic auth', async () => {
    handle = (req, _body, res) => res.end(`${req.url} ${req.headers.authorization ?? '-'}`);
    const base = url.replace('/graphql', '');
    // Alternating, as a client and a callback share the process: what is parsed once per URL stays that URL's.
    for (let i = 0; i < 2; i++) {
      expect((await nodePost(`${base}/a?x=1`, '', {})).text).toBe('/a?x=1 -');
      expect((await nodePost(`${base}/b`, '', {})).text).toBe('/b -');
    }
    const withUser = base.replace('http://', 'http://us%40er:p%3Ass@');
    expect((await nodePost(`${withUser}/c`, '', {})).text).toBe(
      `/c Basic ${Buffer.from('us@er:p:ss').toString('base64')}`,
    );
  });

  it('refuses an answer larger than maxBytes with RESPONSE_TOO_LARGE', async () => {
    handle = (_req, _body, res) => res.end('x'.repeat(200_000));
    const err = await failure(nodePost(url, '', { maxBytes: 100_000 }));
    expect(err).toMatchObject({ code: 'response_too_large' });
    expect(String(err)).toMatch(/more than 100000 bytes/);
    // The connection that carried it is not reused half-read: the next request still works.
    handle = (_req, _body, res) => res.end('ok');
    expect((await nodePost(url, '', {})).text).toBe('ok');
  });

  it("with beyondMax 'drop', a long answer is read to its end and only its start kept", async () => {
    handle = (_req, _body, res) => res.writeHead(202).end('x'.repeat(200_000));
    const answer = await nodePost(url, '', { maxBytes: 100_000, beyondMax: 'drop' });
    expect(answer.status).toBe(202);
    expect(answer.text.length).toBeGreaterThan(0);
    expect(answer.text.length).toBeLessThanOrEqual(100_000);
  });

  it('a lookup decides where a request connects, on a connection of its own each time', async () => {
    handle = (_req, _body, res) => res.end('ok');
    const named = url.replace('127.0.0.1', 'callback.test');
    const refuse: LookupFunction = (_host, _options, callback) =>
      callback(Object.assign(new Error('refused by lookup'), { code: 'REFUSED' }), '', 0);
    expect(await failure(nodePost(named, '', { lookup: refuse }))).toMatchObject({ code: 'REFUSED' });
    expect(connections).toHaveLength(0);
    const local: LookupFunction = (_host, options, callback) =>
      options.all
        ? (callback as never as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [
            { address: '127.0.0.1', family: 4 },
          ])
        : callback(null, '127.0.0.1', 4);
    expect((await nodePost(named, '', { lookup: local })).text).toBe('ok');
    expect((await nodePost(named, '', { lookup: local })).text).toBe('ok');
    expect(connections).toHaveLength(2);
  });

  it('an abort stops a request whose answer has not finished, and one aborted before it starts', async () => {
    handle = (_req, _body, res) => {
      res.writeHead(200);
      res.write('partial'); // and never ends
    };
    const controller = new AbortController();
    const pending = failure(nodePost(url, '', { abortSignal: controller.signal }));
    await new Promise((r) => setTimeout(r, 50));
    controller.abort(new Error('stop now'));
    expect(String(await pending)).toMatch(/stop now/);
    const before = connections.length;
    expect(
      String(await failure(nodePost(url, '', { abortSignal: AbortSignal.abort(new Error('never')) }))),
    ).toMatch(/never/);
    expect(connections).toHaveLength(before);
  });

  it('timeoutMs fails a request whose answer stalls, or that gets none, as a TimeoutError; the caller can still abort', async () => {
    const stalls = (_req: IncomingMessage, _body: string, res: ServerResponse) => {
      res.writeHead(200);
      res.write('partial'); // and never ends
    };
    const silent = () => undefined; // never answers at all
    for (const h of [stalls, silent]) {
      handle = h;
      const started = Date.now();
      const err = await failure(nodePost(url, '', { timeoutMs: 100 }));
      expect(err).toMatchObject({ name: 'TimeoutError' });
      expect(Date.now() - started).toBeGreaterThanOrEqual(90);
    }
    // An abort before the time is up is the caller's, with the caller's reason.
    handle = stalls;
    const controller = new AbortController();
    const pending = failure(nodePost(url, '', { timeoutMs: 10_000, abortSignal: controller.signal }));
    setTimeout(() => controller.abort(new Error('stopped first')), 30);
    expect(String(await pending)).toMatch(/stopped first/);
    // A request that finishes in time is answered, and its timer does not fire later on a reused connection.
    handle = (_req, _body, res) => res.end('in time');
    expect((await nodePost(url, '', { timeoutMs: 100 })).text).toBe('in time');
    await new Promise((r) => setTimeout(r, 150));
    expect((await nodePost(url, '', {})).text).toBe('in time');
  });

  it('a connection reset rejects (the client retries it as a network error)', async () => {
    handle = (req) => req.socket.destroy();
    expect(await failure(nodePost(url, '', {}))).toMatchObject({ code: 'ECONNRESET' });
  });
});

describe('fetchPost (a fetch given to the client)', () => {
  it('answers the same way: status, headers, text, and the size cap', async () => {
    handle = (_req, body, res) => {
      res.writeHead(503, { 'retry-after': '2' });
      res.end(`got ${body}`);
    };
    const post = fetchPost(fetch);
    const answer = await post(url, '{"q":1}', {});
    expect(answer).toMatchObject({ status: 503, text: 'got {"q":1}' });
    expect(answer.header('retry-after')).toBe('2');
    expect(await failure(post(url, 'x'.repeat(50), { maxBytes: 10 }))).toMatchObject({
      code: 'response_too_large',
      message: expect.stringMatching(/more than 10 bytes/),
    });
  });

  it('follows no redirect: the token goes nowhere but where it was sent, and the 307 is the answer', async () => {
    let elsewhere = 0;
    const other = createServer((req, res) => {
      elsewhere++;
      res.end('{}');
    });
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
    try {
      const target = `http://127.0.0.1:${(other.address() as AddressInfo).port}/graphql`;
      handle = (_req, _body, res) => {
        res.writeHead(307, { location: target });
        res.end();
      };
      const answer = await fetchPost(fetch)(url, '{}', { headers: { authorization: 'Bearer t' } });
      expect(answer.status).toBe(307);
      expect(answer.header('location')).toBe(target);
      expect(elsewhere).toBe(0);
    } finally {
      await new Promise<void>((r) => other.close(() => r()));
    }
  });

  it('timeoutMs fails a stalled answer as a TimeoutError, and the caller can still abort', async () => {
    handle = (_req, _body, res) => {
      res.writeHead(200);
      res.write('partial'); // and never ends
    };
    const post = fetchPost(fetch);
    expect(await failure(post(url, '', { timeoutMs: 100 }))).toMatchObject({ name: 'TimeoutError' });
    expect(
      String(
        await failure(
          post(url, '', { timeoutMs: 10_000, abortSignal: AbortSignal.abort(new Error('mine')) }),
        ),
      ),
    ).toMatch(/mine/);
  });
});

/** An address nothing listens on: connections to it are refused. */
const closedPort = async () => {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return `http://127.0.0.1:${port}/graphql`;
};

/*
 * Whether a failed request can have reached the server: a write is sent again only where it cannot
 * (docs/service-rules.md#writes). Proven against real sockets: a closed port, a server that resets after reading.
 */
describe('what a failed request can have done', () => {
  it.each([
    ['nodePost', nodePost],
    ['fetchPost', fetchPost(fetch)],
  ])(
    '%s: a refused connection carried nothing; a reset after the request was read may have',
    async (_, post) => {
      const refused = await failure(post(await closedPort(), '{}', {}));
      expect(neverSent(refused)).toBe(true);
      let read = 0;
      handle = (req) => {
        read++;
        req.socket.destroy(); // the request arrived whole; the answer never comes
      };
      const reset = await failure(post(url, '{"mutation":1}', {}));
      expect(read).toBe(1);
      expect(neverSent(reset)).toBe(false);
    },
  );

  it('a timeout while the server holds the request may have acted; the caller’s own abort is not marked', async () => {
    handle = () => undefined; // never answers
    const timedOut = await failure(nodePost(url, '{}', { timeoutMs: 100 }));
    expect(timedOut).toMatchObject({ name: 'TimeoutError' });
    expect(neverSent(timedOut)).toBe(false);
    const reason = new Error('the caller stopped');
    expect(
      neverSent(
        await failure(nodePost(await closedPort(), '{}', { abortSignal: AbortSignal.abort(reason) })),
      ),
    ).toBe(false);
    for (const socket of connections) (socket as { destroy(): void }).destroy();
  });
});

/** A pacer whose least rate after a 429 without headers is high: the tests here are about retries, not pacing. */
const fastPacer = () => new Pacer({ minRatePerSecond: 1000 });

describe('the GraphQL client: a mutation is sent again only where the tenant cannot have acted on it', () => {
  const tokens = { kind: 'delegated' as const, getToken: async () => 't', invalidate: () => undefined };
  const retry = { maxAttempts: 4, baseDelayMs: 1, maxDelayMs: 5 };
  const MUTATION = 'mutation Set($v: Int) { set(v: $v) { id } }';

  it('a reset after the request was read: OutcomeUnknown after one attempt; the same for a query is retried', async () => {
    let requests = 0;
    handle = (req) => {
      requests++;
      req.socket.destroy();
    };
    const client = new TenantGraphqlClient(url, tokens, { retry });
    const err = await failure(client.request(MUTATION, { variables: { v: 1 } }));
    expect(err).toBeInstanceOf(OutcomeUnknown);
    expect(err).toMatchObject({ code: 'outcome_unknown' });
    expect(requests).toBe(1);
    requests = 0;
    await failure(client.request('query Q { x }'));
    expect(requests).toBe(4);
  });

  it.each([
    [502, 1, 'outcome_unknown'],
    [500, 1, 'outcome_unknown'],
    [504, 1, 'outcome_unknown'],
    [503, 4, 'upstream_unavailable'],
    [429, 4, 'upstream_unavailable'],
  ])('HTTP %i: %i attempt(s), then %s', async (status, attempts, code) => {
    let requests = 0;
    handle = (_req, _body, res) => {
      requests++;
      res.writeHead(status, { 'content-type': 'application/json', 'retry-after': '0' });
      res.end(JSON.stringify({ errors: [{ message: 'busy' }] }));
    };
    // No patience for 429s here (it has its own test below), and a pacer that does not slow a test down.
    const client = new TenantGraphqlClient(url, tokens, {
      retry,
      rateLimitPatienceMs: 0,
      pacer: fastPacer(),
    });
    const err = await failure(client.request(MUTATION));
    expect(err).toMatchObject({ code });
    expect(requests).toBe(attempts);
    // Where every attempt was refused before it was handled, the write may wait and go later.
    if (code === 'upstream_unavailable') expect((err as UpstreamError).unsent).toBe(true);
  });

  it('429s do not use up the attempts while the patience lasts: sent again until the tenant takes it', async () => {
    let requests = 0;
    handle = (_req, _body, res) => {
      requests++;
      res.writeHead(requests <= 6 ? 429 : 200, { 'content-type': 'application/json', 'retry-after': '0' });
      res.end(
        JSON.stringify(requests <= 6 ? { errors: [{ message: 'slow down' }] } : { data: { set: { id: 1 } } }),
      );
    };
    const client = new TenantGraphqlClient(url, tokens, { retry, pacer: fastPacer() });
    await expect(client.request(MUTATION)).resolves.toEqual({ set: { id: 1 } });
    expect(requests).toBe(7);
  });

  it('a 503 whose body carries data ran: unknown, not retried; a 200 that is not GraphQL: unknown', async () => {
    let requests = 0;
    handle = (_req, _body, res) => {
      requests++;
      res.writeHead(requests === 1 ? 503 : 200, { 'content-type': 'application/json' });
      res.end(requests === 1 ? JSON.stringify({ data: { set: { id: 1 } } }) : '<html>proxy</html>');
    };
    const client = new TenantGraphqlClient(url, tokens, { retry });
    expect(await failure(client.request(MUTATION))).toBeInstanceOf(OutcomeUnknown);
    expect(await failure(client.request(MUTATION))).toBeInstanceOf(OutcomeUnknown);
    expect(requests).toBe(2);
  });

  it('a refused connection each time: every attempt made, the write said unsent; no token: unsent too', async () => {
    const err = await failure(
      new TenantGraphqlClient(await closedPort(), tokens, { retry }).request(MUTATION),
    );
    // The client's code for "no answer" (network error or timeout), marked as never sent.
    expect(err).toMatchObject({ code: 'upstream_timeout', unsent: true });
    const noToken = {
      ...tokens,
      getToken: async () => {
        throw new UpstreamError('upstream_unavailable', 'https://idp.example/token', 'refresh failed');
      },
    };
    const again = await failure(new TenantGraphqlClient(url, noToken, { retry }).request(MUTATION));
    expect(again).toMatchObject({ code: 'upstream_unavailable', unsent: true });
    expect(String(again)).toMatch(/not sent: no access token/);
  });
});
