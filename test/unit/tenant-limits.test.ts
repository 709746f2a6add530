import { parse } from 'graphql';
import { OffsetClock } from '../../shared/clock';
import { GraphqlErrors, IntegrationError } from '../../shared/errors';
import type { TenantGraphqlClient } from '../../shared/graphql/client';
import { ColumnLearner } from '../../shared/formats/parquet/columns';
import { isSizeRefusal, sizeRefusal } from '../../shared/graphql/limits';
import { ChangeDetector } from '../../shared/sync/change-detector';
import { fnv1a32 } from '../../shared/sync/hash';
import { recordKeys } from '../../shared/streams/document';
import { paginate, type Page } from '../../shared/graphql/pager';
import { Pacer, rateStateOf } from '../../shared/net/pacer';
import { withRetries, type Attempt } from '../../shared/net/retry';
import { parseStreams, type StreamDefinition } from '../../shared/streams';
import { complexityOf, parseLimits, RateWindows } from '../../sandbox/limits';

/**
 * Limits the tenant never announced (the seed: "not shown"), learnt from its answers: a page refused as too costly
 * is asked again smaller, a rate is kept under. The sandbox's side (sandbox/limits.ts) is what the integration tests
 * run against; here each part's edges.
 */

const refusal = (message: string, code?: string) =>
  new GraphqlErrors('Page', [{ message, ...(code ? { code } : {}) }], null, { upstreamStatus: 200 });

describe('a refusal for asking too much, recognised and read', () => {
  it('takes the proportion the numbers allow: complexity 1700 over a maximum of 400 at 100 a page → 23', () => {
    const r = sizeRefusal(
      refusal(
        'Query has complexity 1700, which exceeds the maximum of 400. Request fewer records per page',
        'MAX_COMPLEXITY_EXCEEDED',
      ),
      100,
    );
    expect(r).toEqual({
      next: 23,
      reason: expect.stringContaining('1700'),
      limit: 'the tenant’s complexity ceiling',
    });
  });
  it('knows other servers’ words: Shopify’s cost, GitHub’s nodes, a page-size argument, thousands with commas', () => {
    expect(
      sizeRefusal(
        refusal(
          'Query cost is 2,500, which exceeds the single query max cost limit (1,000).',
          'MAX_COST_EXCEEDED',
        ),
        100,
      ),
    ).toMatchObject({ next: 40, limit: 'the tenant’s cost limit' });
    expect(
      sizeRefusal(
        refusal(
          'This query requests up to 600,000 possible nodes which exceeds the maximum limit of 500,000.',
          'MAX_NODE_LIMIT_EXCEEDED',
        ),
        100,
      ),
    ).toMatchObject({ next: 83, limit: 'the tenant’s node limit' });
    expect(sizeRefusal(refusal('Argument "first" must be at most 50'), 100)).toMatchObject({ next: 50 });
    // No numbers to go by: half.
    expect(sizeRefusal(refusal('Query is too complex'), 100)).toMatchObject({ next: 50 });
  });
  it('is not fooled: a rate limit, another error, a number that would not lower the size, or no GraphQL error at all', () => {
    expect(
      sizeRefusal(refusal('Rate limit exceeded: 5000 points per hour', 'RATE_LIMITED'), 100),
    ).toBeUndefined();
    expect(
      sizeRefusal(refusal('Cannot query field "nope" on type "Control".', 'GRAPHQL_VALIDATION_FAILED'), 100),
    ).toBeUndefined();
    expect(sizeRefusal(new Error('complexity'), 100)).toBeUndefined();
    // "at most 500" while asking 100: the words say too much was asked, so the size still goes down.
    expect(sizeRefusal(refusal('Argument "first" must be at most 500'), 100)?.next).toBeLessThan(100);
    expect(sizeRefusal(refusal('Query has complexity 3, which exceeds the maximum of 2'), 1)?.next).toBe(0);
    // Numbers that allow less than one record at 100: one is still tried before the stream gives up.
    expect(
      sizeRefusal(refusal('Query has complexity 1701, which exceeds the maximum of 10'), 100)?.next,
    ).toBe(1);
  });
});

/**
 * The words known servers refuse a costly page with, and errors that must never lower a page. Sources: each server's
 * documentation or source (named beside each row); what must not match is what ordinary queries meet.
 */
describe('which errors are a refusal for asking too much: a table of servers’ words', () => {
  it.each([
    ['graphql-query-complexity', 'Query has complexity 1700, which exceeds the maximum of 400'],
    [
      'graphql-query-complexity (estimators)',
      'The query exceeds the maximum complexity of 1000. Actual complexity is 2000',
    ],
    ['graphql-cost-analysis', 'The query exceeds the maximum cost of 1000. Actual cost is 2000'],
    [
      'GitHub, nodes',
      'This query requests up to 600,000 possible nodes which exceeds the maximum limit of 500,000.',
    ],
    [
      'GitHub, first',
      'Requesting 101 records on the `issues` connection exceeds the `first` limit of 100 records.',
    ],
    ['GitLab', 'Query has complexity of 1700, which exceeds max complexity of 400'],
    ['Shopify', 'Query cost is 2,500, which exceeds the single query max cost limit (1,000).'],
    [
      'Contentful',
      'Query cannot be executed. The maximum allowed complexity for a query is 11000 but it was 13000.',
    ],
    ['Hot Chocolate, complexity', 'The maximum allowed complexity was exceeded.'],
    ['Hot Chocolate, paging', 'The maximum allowed items per page were exceeded.'],
    ['graphql-java', 'maximum query complexity exceeded 1200 > 1000'],
    ['a paging argument', 'Argument "first" must be at most 50'],
    ['a paging argument', 'first: must be less than or equal to 100'],
    ['a paging argument', '`limit` cannot exceed 500'],
    ['no numbers', 'Query is too complex'],
    ['an answer-size limit', 'Response too large: the answer exceeds 10485760 bytes'],
  ])('%s: “%s”', (_, message) => {
    expect(isSizeRefusal({ message })).toBe(true);
  });

  it.each([
    ['Shopify', 'MAX_COST_EXCEEDED'],
    ['GitHub', 'MAX_NODE_LIMIT_EXCEEDED'],
    ['Contentful', 'TOO_COMPLEX_QUERY'],
    ['Hot Chocolate', 'HC0047'],
  ])('%s’s code %s, whatever its words', (_, code) => {
    expect(isSizeRefusal({ message: 'refused', code })).toBe(true);
  });

  it.each([
    ['a null in a non-null field named cost', 'Cannot return null for non-nullable field Item.cost.'],
    ['a null in a non-null field', 'Cannot return null for non-nullable field Query.controls.'],
    ['a field that does not exist', 'Cannot query field "complexity" on type "Control".'],
    ['an argument that does not exist', 'Unknown argument "first" on field "Query.controls".'],
    ['a missing variable', 'Variable "$first" of required type "Int!" was not provided.'],
    ['a bad value', 'Int cannot represent non-integer value: 1.5'],
    ['a bad value', 'Expected value of type "Int", found "all".'],
    ['a bad argument', 'Argument "first" has invalid value -5.'],
    ['a selection missing', 'Field "cost" of type "Money!" must have a selection of subfields.'],
    ['a rate limit', 'Rate limit exceeded: 5000 points per hour'],
    ['a rate limit', 'Too many requests, please slow down'],
    ['a depth limit (no page size helps)', 'maximum query depth exceeded 12 > 10'],
    ['a depth limit', 'Query depth limit of 10 exceeded'],
    ['a quota of a plan', 'Not authorized to access records of type Evidence'],
    ['an internal error', 'Internal server error: complexity calculation failed'],
    ['a validation of first', 'first must be a positive integer'],
    ['a syntax error', 'Syntax Error: Expected Name, found <EOF>.'],
  ])('not %s: “%s”', (_, message) => {
    expect(isSizeRefusal({ message })).toBe(false);
  });

  it('rate and throttle codes are never a size, whatever the words', () => {
    expect(isSizeRefusal({ message: 'Query is too complex', code: 'RATE_LIMITED' })).toBe(false);
    expect(isSizeRefusal({ message: 'exceeds the maximum cost', code: 'THROTTLED' })).toBe(false);
  });

  it('two numbers in either order give the proportion: “is 11000 but it was 13000” at 100 a page → 84', () => {
    expect(
      sizeRefusal(
        refusal(
          'Query cannot be executed. The maximum allowed complexity for a query is 11000 but it was 13000.',
        ),
        100,
      )?.next,
    ).toBe(84);
  });
});

/** A tenant of `total` records behind one stream, refusing a page that costs more than `ceiling` (1 + size × 17). */
function costlyTenant(stream: StreamDefinition, total: number, ceiling: number) {
  const asked: Array<Record<string, unknown>> = [];
  const client = {
    endpoint: 'https://tenant.example/graphql',
    request: async (_doc: string, { variables = {} }: { variables?: Record<string, unknown> }) => {
      asked.push(variables);
      const size = Number(variables.first ?? variables.limit ?? variables.perPage ?? 0);
      const cost = 1 + size * 17;
      if (cost > ceiling)
        throw refusal(
          `Query has complexity ${cost}, which exceeds the maximum of ${ceiling}.`,
          'MAX_COMPLEXITY_EXCEEDED',
        );
      const ids = Array.from({ length: total }, (_, i) => `r${i}`);
      if (stream.pagination === 'cursor') {
        const from = variables.after ? Number(String(variables.after).slice(1)) + 1 : 0;
        const page = ids.slice(from, from + size);
        return {
          items: {
            nodes: page.map((id) => ({ id })),
            pageInfo: { hasNextPage: from + size < total, endCursor: page.at(-1) ?? null },
          },
        };
      }
      if (stream.pagination === 'page') {
        const from = (Number(variables.page) - 1) * size;
        return { items: ids.slice(from, from + size).map((id) => ({ id })) };
      }
      const from = Number(variables.offset);
      return { items: ids.slice(from, from + size).map((id) => ({ id })) };
    },
  } as unknown as TenantGraphqlClient;
  return { client, asked };
}

const stream = (pagination: 'cursor' | 'offset' | 'page') =>
  parseStreams(
    {
      streams: [
        {
          name: 'items',
          document:
            pagination === 'cursor'
              ? 'query Items($first: Int!, $after: String) { items(first: $first, after: $after) { nodes { id } pageInfo { hasNextPage endCursor } } }'
              : pagination === 'offset'
                ? 'query Items($limit: Int!, $offset: Int!) { items(limit: $limit, offset: $offset) { id } }'
                : 'query Items($page: Int!, $perPage: Int!) { items(page: $page, perPage: $perPage) { id } }',
          pagination,
          paths:
            pagination === 'cursor'
              ? {
                  records: 'items.nodes',
                  hasNextPage: 'items.pageInfo.hasNextPage',
                  endCursor: 'items.pageInfo.endCursor',
                }
              : { records: 'items' },
          pageSize: 100,
        },
      ],
    },
    'test',
  )[0];

async function listAll(
  s: StreamDefinition,
  ceiling: number,
  options: { startCursor?: string; pageSize?: number } = {},
) {
  const tenant = costlyTenant(s, 250, ceiling);
  const lowered: Array<[number, string]> = [];
  const pages: Page[] = [];
  for await (const p of paginate(tenant.client, s, {
    pageSize: options.pageSize ?? s.pageSize,
    startCursor: options.startCursor,
    onPageSize: (size, limit) => lowered.push([size, limit]),
  }))
    pages.push(p);
  return {
    pages,
    lowered,
    asked: tenant.asked,
    ids: pages.flatMap((p) => p.records.map((r) => (r as { id: string }).id)),
  };
}

describe('a page refused as too costly is asked again smaller', () => {
  it.each(['cursor', 'offset', 'page'] as const)(
    '%s pagination: every record once, at the size the ceiling allows',
    async (kind) => {
      const { pages, lowered, ids } = await listAll(stream(kind), 400);
      expect(lowered).toEqual([[23, 'the tenant’s complexity ceiling']]);
      expect(ids).toEqual(Array.from({ length: 250 }, (_, i) => `r${i}`));
      expect(pages.every((p) => p.pageSize === 23)).toBe(true);
    },
  );
  it('page numbers past the first stay where they were: the new size divides the old, the page number moves', async () => {
    // Resumed at page 3 of 100 (records 200 on), the ceiling now allows 23: 20 divides 100, so page 11 of 20.
    const { lowered, asked, ids } = await listAll(stream('page'), 400, { startCursor: '3' });
    expect(lowered).toEqual([[20, 'the tenant’s complexity ceiling']]);
    expect(asked[1]).toEqual({ page: 11, perPage: 20 });
    expect(ids).toEqual(Array.from({ length: 50 }, (_, i) => `r${200 + i}`));
  });
  it('a ceiling that not even one record fits fails the stream naming the limit and the fix', async () => {
    const failure = await listAll(stream('cursor'), 10).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(IntegrationError);
    expect((failure as IntegrationError).code).toBe('tenant_limit');
    expect((failure as Error).message).toContain('a page of 1 record');
    expect((failure as Error).message).toContain('exceeds the maximum of 10');
  });
});

/** Whether the next request would wait (its wait given up at once: the clock here does not move by itself). */
function waits(pacer: Pacer): boolean {
  const stop = new AbortController();
  const wait = pacer.before(stop.signal);
  stop.abort();
  wait?.catch(() => undefined);
  return wait !== undefined;
}

describe('the pacer keeps a credential under the tenant’s rate', () => {
  const headers = (h: Record<string, string>) => (name: string) => h[name] ?? null;
  it('reads the IETF fields, the X- fields (GitHub’s reset is a time), and the combined field', () => {
    expect(
      rateStateOf(headers({ 'ratelimit-limit': '8', 'ratelimit-remaining': '3', 'ratelimit-reset': '1' })),
    ).toEqual({
      limit: 8,
      remaining: 3,
      resetSeconds: 1,
    });
    const at = Math.floor(Date.now() / 1000) + 30;
    const x = rateStateOf(
      headers({ 'x-ratelimit-limit': '5000', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(at) }),
    );
    expect(x?.resetSeconds).toBeGreaterThan(25);
    expect(x?.resetSeconds).toBeLessThanOrEqual(30);
    expect(rateStateOf(headers({ ratelimit: 'limit=10, remaining=0, reset=4' }))).toEqual({
      limit: 10,
      remaining: 0,
      resetSeconds: 4,
    });
    expect(rateStateOf(headers({}))).toBeUndefined();
  });
  it('with headers: spends what the window has left, counting requests in flight, then waits for its reset', () => {
    const clock = new OffsetClock();
    clock.freeze(true);
    const pacer = new Pacer({ clock });
    expect(pacer.before()).toBeUndefined(); // nothing known yet: go
    expect(pacer.before()).toBeUndefined();
    // The first answer: 2 left — one of ours is still in flight, so one more may go now.
    pacer.after(200, headers({ 'ratelimit-limit': '4', 'ratelimit-remaining': '2', 'ratelimit-reset': '1' }));
    expect(pacer.before()).toBeUndefined();
    expect(waits(pacer)).toBe(true);
    expect(pacer.stats.waited).toBe(1);
  });
  it('without headers, nothing is paced until a 429; then half the last second’s rate, growing again with each answer', () => {
    const clock = new OffsetClock();
    clock.freeze(true);
    const pacer = new Pacer({ clock });
    for (let i = 0; i < 10; i++) {
      expect(pacer.before()).toBeUndefined();
      pacer.after(200);
    }
    pacer.before();
    pacer.after(429);
    // 11 sent in the last second: 5.5 a second from now on, so the next waits ~180 ms.
    expect(waits(pacer)).toBe(true);
    clock.advanceSeconds(0.2);
    expect(pacer.before()).toBeUndefined();
  });
  it('Retry-After stops every request of the credential until then', () => {
    const clock = new OffsetClock();
    clock.freeze(true);
    const pacer = new Pacer({ clock });
    pacer.before();
    pacer.after(429, headers({}), 2000);
    expect(waits(pacer)).toBe(true);
    clock.advanceSeconds(2);
    expect(pacer.before()).toBeUndefined();
  });
});

describe('a reset of any size costs a request no more than its patience, and never a timer that fires at once', () => {
  const headers = (h: Record<string, string>) => (name: string) => h[name] ?? null;
  const NOW = Date.parse('2026-11-28T12:00:00Z');
  let warnings: string[];
  const onWarning = (w: Error) => warnings.push(w.name);
  beforeEach(() => {
    warnings = [];
    process.on('warning', onWarning);
    jest.useFakeTimers({ now: NOW });
  });
  afterEach(() => {
    jest.useRealTimers();
    process.off('warning', onWarning);
  });

  it('reads a reset as a delta, an epoch second or an epoch millisecond; ignores what it cannot read', () => {
    const reset = (v: string, name = 'x-ratelimit-reset') =>
      rateStateOf(headers({ 'x-ratelimit-remaining': '0', [name]: v }), NOW)?.resetSeconds;
    expect(reset('30')).toBe(30);
    expect(reset(String(NOW / 1000 + 30))).toBe(30);
    expect(reset(String(NOW + 30_000))).toBe(30);
    expect(reset(String(NOW + 30_000), 'ratelimit-reset')).toBe(30);
    expect(reset(String(NOW - 30_000))).toBe(0); // in the past: now
    expect(reset('99999999')).toBe(99_999_999); // a delta of three years: capped by the pacer, below
    for (const unreadable of ['soon', '-5', '1e400', '', 'Thu, 01 Jan 2026 00:00:00 GMT'])
      expect([unreadable, reset(unreadable)]).toEqual([unreadable, undefined]);
  });

  /** How long (fake) time must pass before the request `before()` held may go. */
  async function heldFor(pacer: Pacer, clock: OffsetClock, patienceMs?: number, onStep?: () => void) {
    let gone = false;
    const wait = pacer.before(undefined, patienceMs);
    expect(wait).toBeDefined();
    void wait?.then(() => (gone = true));
    let waited = 0;
    while (!gone && waited < 3_600_000) {
      onStep?.();
      clock.advanceSeconds(1);
      await jest.advanceTimersByTimeAsync(1000);
      waited += 1000;
    }
    return waited;
  }

  it.each([
    [
      'RateLimit-Reset: 99999999 (three years)',
      { 'ratelimit-remaining': '0', 'ratelimit-reset': '99999999' },
      60_000,
    ],
    [
      'X-RateLimit-Reset in epoch milliseconds, a minute off',
      { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(NOW + 45_000) },
      45_000,
    ],
    [
      'X-RateLimit-Reset of 2100 in epoch milliseconds',
      { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(Date.parse('2100-01-01')) },
      60_000,
    ],
    ['combined `reset=` of a year', { ratelimit: 'limit=10, remaining=0, reset=31536000' }, 60_000],
  ])('%s: one wait of at most a minute, no warning', async (_, h, expected) => {
    const clock = new OffsetClock();
    clock.freeze(true);
    const pacer = new Pacer({ clock });
    pacer.before();
    pacer.after(429, headers(h));
    expect(await heldFor(pacer, clock)).toBe(expected);
    // A timeout past 2³¹ ms fires after 1 ms with a TimeoutOverflowWarning: a loop of them was the failure.
    expect(warnings).toEqual([]);
  });

  it('a tenant that keeps saying "wait": the request goes once its patience is spent', async () => {
    const clock = new OffsetClock();
    clock.freeze(true);
    const pacer = new Pacer({ clock });
    pacer.before();
    const refuse = () =>
      pacer.after(429, headers({ 'ratelimit-remaining': '0', 'ratelimit-reset': '99999999' }), 60_000);
    refuse();
    // Every second another answer of the credential says the same: the window never opens.
    expect(await heldFor(pacer, clock, 150_000, refuse)).toBe(150_000);
    expect(warnings).toEqual([]);
  });
});

describe('a 429 does not use up a request’s attempts while its patience lasts', () => {
  const policy = { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 2 };
  const run = (statuses: number[], budgetMs: number) => {
    let i = 0;
    return withRetries(
      async (): Promise<Attempt<string>> =>
        i < statuses.length
          ? { transient: { status: statuses[i++], retryAfter: '0' } }
          : { done: `after ${i}` },
      policy,
      {
        patience: { when: (f) => f.status === 429, budgetMs },
        exhausted: (f, n) => new Error(`exhausted after ${n} (HTTP ${f.status})`),
      },
    );
  };
  it('ten 429s in a row, then an answer', async () => {
    await expect(run(Array(10).fill(429), 10_000)).resolves.toBe('after 10');
  });
  it('other failures still count: two 503s end it, 429s between them or not', async () => {
    await expect(run([503, 429, 429, 503], 10_000)).rejects.toThrow('exhausted after 4 (HTTP 503)');
  });
  it('past its budget a 429 counts like any failure; each counts a second at least, so "Retry-After: 0" ends too', async () => {
    // A budget of 5 s: five patient 429s, then two that count, and it ends — whatever the waits were.
    await expect(run(Array(100).fill(429), 5000)).rejects.toThrow('exhausted after 7 (HTTP 429)');
  });
});

describe('the sandbox’s limits', () => {
  it('costs a query as GitHub does: a paged field’s selection times its size, variables and fragments read', () => {
    const doc = parse(
      'query Q($n: Int!) { tenant { name } controls(first: $n) { nodes { ...C } pageInfo { hasNextPage } } } fragment C on Control { id title owner { name } }',
    );
    // tenant 1 + name 1; controls 1 + n × (nodes 1 + id, title, owner 1 + name = 4 … pageInfo 1 + hasNextPage 1)
    expect(complexityOf(doc, { n: 10 })).toBe(2 + 1 + 10 * (1 + 4 + 2));
    expect(complexityOf(doc, { n: 1 })).toBeLessThan(complexityOf(doc, { n: 2 }));
  });
  it('--limits is read strictly', () => {
    expect(parseLimits('complexity=400,rate=8')).toEqual({ complexity: 400, rate: 8 });
    expect(() => parseLimits('speed=3')).toThrow('"speed=3" is not complexity=N or rate=R');
    expect(() => parseLimits('rate=0')).toThrow('--limits: rate');
  });
  it('a rate per credential in one-second windows, its state in every answer, Retry-After on the refusal', () => {
    let now = 10_500;
    const windows = new RateWindows(() => now);
    expect(windows.admit('a', 2).headers).toMatchObject({
      'ratelimit-limit': '2',
      'ratelimit-remaining': '1',
    });
    expect(windows.admit('a', 2).allowed).toBe(true);
    const refused = windows.admit('a', 2);
    expect(refused).toMatchObject({
      allowed: false,
      headers: { 'retry-after': '1', 'ratelimit-remaining': '0' },
    });
    expect(windows.admit('b', 2).allowed).toBe(true); // another credential, its own window
    now = 11_000;
    expect(windows.admit('a', 2).allowed).toBe(true);
  });
});

describe('a record carrying keys nobody selected', () => {
  it('makes no Parquet column: the columns are the selection’s, the other keys counted', () => {
    const learner = new ColumnLearner(['id'], ['id', 'name', 'size']);
    learner.add({ id: 'a', name: 'x', size: 1, injected: 'y' });
    learner.add({ id: 'b', name: 'z', extra: { deep: true } });
    expect([...learner.columns().keys()]).toEqual(['name', 'size']);
    expect(learner.unexpected).toBe(2);
  });
  it('the selection’s keys are read from the stream’s document, aliases as answered, fragments followed', () => {
    expect(
      recordKeys(
        'query Q { items { nodes { id label: name ...F } } } fragment F on Item { size owner { name } }',
        ['items', 'nodes'],
      ),
    ).toEqual(['id', 'label', 'size', 'owner']);
  });
});

describe('a key met twice in a listing that gives each record once', () => {
  const entriesOf = async function* (pages: Buffer[]) {
    yield* pages;
  };
  it('first run: the stream fails when the listing ends, naming the key and its value — nothing sealed before', async () => {
    const d = new ChangeDetector('bewijzen', undefined, { idPath: 'maatregelId', uniqueKeys: true });
    const pages: Buffer[] = [];
    d.page([
      { maatregelId: 'm1', t: 1 },
      { maatregelId: 'm2', t: 2 },
    ]);
    pages.push(d.takePageEntries());
    d.page([
      { maatregelId: 'm3', t: 3 },
      { maatregelId: 'm1', t: 4 },
    ]);
    pages.push(d.takePageEntries());
    const failure = await d.verifyKeys(entriesOf(pages)).catch((e: unknown) => e);
    expect(failure).toMatchObject({ code: 'duplicate_key' });
    expect((failure as Error).message).toContain('two records of this pass have maatregelId "m1"');
  });
  it('ids that only share a 32-bit fingerprint are not a duplicate', async () => {
    // Two ids whose fnv1a32 is the same: a birthday search, ~80 000 ids.
    const seen = new Map<number, string>();
    let pair: [string, string] | undefined;
    for (let i = 0; !pair; i++) {
      const id = `rec-${i}`;
      const h = fnv1a32(Buffer.from(id)) || 1;
      const other = seen.get(h);
      if (other) pair = [other, id];
      else seen.set(h, id);
    }
    const d = new ChangeDetector('items', undefined, { idPath: 'id', uniqueKeys: true });
    d.page([{ id: pair[0] }, { id: 'x' }]);
    const first = d.takePageEntries();
    d.page([{ id: pair[1] }]);
    expect(d.suspects.size).toBe(1);
    await expect(d.verifyKeys(entriesOf([first, d.takePageEntries()]))).resolves.toBeUndefined();
  });
  it('a full pass over a stored snapshot: a known key met twice fails at once', () => {
    const before = new ChangeDetector('items', undefined, { idPath: 'id' });
    before.page([{ id: 'a' }, { id: 'b' }]);
    const d = new ChangeDetector('items', before.takePageEntries(), { idPath: 'id', uniqueKeys: true });
    d.page([{ id: 'a', v: 1 }]);
    expect(() => d.page([{ id: 'a', v: 2 }])).toThrow('two records of this pass have id "a"');
  });
});
