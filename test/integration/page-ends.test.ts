import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createSchema, createYoga } from 'graphql-yoga';
import { discover } from '../../shared/catalog';
import { provePageEnds } from '../../shared/catalog/page-ends';
import { TenantGraphqlClient, type TokenSource } from '../../shared/graphql/client';
import { paginate } from '../../shared/graphql/pager';
import type { StreamDefinition } from '../../shared/streams';

/**
 * Where a cursor list ends when the stream does not ask `hasNextPage` (shared/catalog/page-ends.ts proves a server
 * may go without it): a Relay connection served by graphql-yoga over a list, in three behaviours — `full` (every
 * page full until the last), `capped` (answers at most 3 records whatever is asked: short pages before the end,
 * hasNextPage true), `filtered` (a page drops every third record of what it scanned, as a filtered list does).
 * The server counts the records it served and the pages whose `hasNextPage` it was asked.
 */

type Mode = 'full' | 'capped' | 'filtered' | 'jagged';
/** Item i changed i minutes into 2026 — items 12 to 16 in 2025: a filter by change time drops them mid-list. */
const at = (i: number) =>
  new Date(Date.UTC(i >= 12 && i <= 16 ? 2025 : 2026, 0, 1) + i * 60_000).toISOString();
const state = { mode: 'full' as Mode, size: 10, served: 0, requests: 0, askedMore: 0 };

const schema = createSchema({
  typeDefs: /* GraphQL */ `
    type Item {
      id: ID!
      name: String!
      updatedAt: String!
    }
    type ItemEdge {
      cursor: String!
      node: Item!
    }
    type PageInfo {
      hasNextPage: Boolean!
      endCursor: String
    }
    type ItemConnection {
      nodes: [Item!]!
      edges: [ItemEdge!]!
      pageInfo: PageInfo!
      totalCount: Int!
    }
    type Query {
      items(first: Int, after: String): ItemConnection!
      changes(first: Int, after: String, updatedSince: String): ItemConnection!
    }
  `,
  resolvers: {
    Query: {
      // Every page full, but a filter (changed since…) applied after the page's scan: short pages before the end.
      changes: (
        _: unknown,
        args: { first?: number; after?: string | null; updatedSince?: string | null },
      ) => {
        const start = args.after ? Number(args.after) : 0;
        const scanned = Array.from({ length: state.size }, (_, i) => i)
          .slice(start, start + (args.first ?? 10))
          .filter((i) => !args.updatedSince || at(i) >= args.updatedSince);
        const end = Math.min(start + (args.first ?? 10), state.size);
        const nodes = scanned.map((i) => ({ id: `item-${i}`, name: `Item ${i}`, updatedAt: at(i) }));
        return {
          nodes,
          edges: [],
          pageInfo: { hasNextPage: end < state.size, endCursor: String(end) },
          totalCount: state.size,
        };
      },
      items: (_: unknown, args: { first?: number; after?: string | null }) => {
        state.requests++;
        const start = args.after ? Number(args.after) : 0;
        const asked = args.first ?? 10;
        // jagged: the page from record 10 comes back with 4 records, whatever was asked (none is skipped).
        const take =
          state.mode === 'capped' ? Math.min(asked, 3) : state.mode === 'jagged' && start === 10 ? 4 : asked;
        const scanned = Array.from({ length: state.size }, (_, i) => i)
          .slice(start, start + take)
          .filter((i) => state.mode !== 'filtered' || i % 3 !== 1);
        const end = Math.min(start + take, state.size);
        const nodes = scanned.map((i) => ({ id: `item-${i}`, name: `Item ${i}`, updatedAt: at(i) }));
        state.served += nodes.length;
        return {
          nodes,
          edges: nodes.map((node, k) => ({ cursor: String(scanned[k] + 1), node })),
          pageInfo: () => ({
            hasNextPage: () => {
              state.askedMore++;
              return end < state.size;
            },
            endCursor: String(end),
          }),
          totalCount: state.size,
        };
      },
    },
  },
});

let server: Server;
let client: TenantGraphqlClient;
beforeAll(async () => {
  const yoga = createYoga({ schema, logging: false, graphqlEndpoint: '/graphql' });
  server = createServer(yoga);
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const tokens: TokenSource = { kind: 'm2m', getToken: async () => 't', invalidate: () => undefined };
  client = new TenantGraphqlClient(
    `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`,
    tokens,
    { retry: { maxAttempts: 1, baseDelayMs: 1, maxDelayMs: 1 } },
  );
});
afterAll(() => new Promise<void>((ok) => server.close(() => ok())));

const set = (mode: Mode, size: number) =>
  Object.assign(state, { mode, size, served: 0, requests: 0, askedMore: 0 });

async function discovered(name = 'items'): Promise<{ stream: StreamDefinition; pageEnds?: string }> {
  const found = await discover(client);
  const p = found.streams.find((s) => s.stream.name === name);
  if (!p) throw new Error('no items stream proposed');
  return p;
}

async function ids(stream: StreamDefinition, pageSize: number): Promise<string[]> {
  const out: string[] = [];
  for await (const page of paginate(client, stream, { pageSize }))
    out.push(...page.records.map((r) => (r as { id: string }).id));
  return out;
}

describe('a cursor list read without hasNextPage', () => {
  it('discovery proves full pages, asks nodes without hasNextPage, and a pass reads every record once', async () => {
    set('full', 25);
    const p = await discovered();
    expect(p.stream.document).toContain('nodes {');
    expect(p.stream.document).not.toContain('hasNextPage');
    expect(p.stream.paths).not.toHaveProperty('hasNextPage');
    expect(p.pageEnds).toMatch(
      /^at an empty page, hasNextPage not asked — proved: 3 pages of 2 full before the next$/,
    );

    for (const [size, pageSize, requests] of [
      [25, 10, 4], // the short third page, then an empty one ends it
      [30, 10, 4],
      [7, 10, 2],
      [0, 10, 1],
    ]) {
      set('full', size);
      const got = await ids(p.stream, pageSize);
      expect(got).toEqual(Array.from({ length: size }, (_, i) => `item-${i}`));
      expect(state).toMatchObject({ served: size, requests, askedMore: 0 });
    }
  });

  it('a server that caps the page below the size asked is read to its end, every record once', async () => {
    set('full', 25);
    const { stream } = await discovered();
    set('capped', 11);
    expect(await ids(stream, 5)).toEqual(Array.from({ length: 11 }, (_, i) => `item-${i}`));
    // 3, 3, 3, 2, then an empty page.
    expect(state).toMatchObject({ served: 11, requests: 5, askedMore: 0 });
  });

  it('a page short mid-list that discovery did not see (the server changed) ends nothing: every record once', async () => {
    set('full', 25);
    const { stream } = await discovered();
    set('jagged', 25);
    expect(await ids(stream, 10)).toEqual(Array.from({ length: 25 }, (_, i) => `item-${i}`));
    // 10, 4 (short), 10, 1, then the empty page that ends it.
    expect(state).toMatchObject({ served: 25, requests: 5, askedMore: 0 });
  });

  it('a pass resumed from a checkpoint reads the rest once, to its end', async () => {
    set('full', 25);
    const { stream } = await discovered();
    set('full', 25);
    const seen: string[] = [];
    let checkpoint: string | null = null;
    for await (const page of paginate(client, stream, { pageSize: 10 })) {
      seen.push(...page.records.map((r) => (r as { id: string }).id));
      checkpoint = page.endCursor;
      break; // the pass stops after its first page
    }
    for await (const page of paginate(client, stream, { pageSize: 10, startCursor: checkpoint }))
      seen.push(...page.records.map((r) => (r as { id: string }).id));
    expect(seen).toEqual(Array.from({ length: 25 }, (_, i) => `item-${i}`));
  });

  it('a server whose pages are short before the end keeps hasNextPage, and its pass misses nothing', async () => {
    set('filtered', 25);
    const p = await discovered();
    expect(p.stream.document).toContain('hasNextPage');
    expect(p.pageEnds).toMatch(/where hasNextPage says — a page of 1 records \(2 asked\) said more follow/);
    const got = await ids(p.stream, 10);
    expect(got).toEqual(
      Array.from({ length: 25 }, (_, i) => i)
        .filter((i) => i % 3 !== 1)
        .map((i) => `item-${i}`),
    );
  });

  it('a stream whose incremental passes filter the list keeps hasNextPage: a filtered page may be short before the end', async () => {
    set('full', 25);
    const p = await discovered('changes');
    expect(p.stream.incremental).toMatchObject({ variable: 'updatedSince', field: 'updatedAt' });
    expect(p.stream.document).toContain('hasNextPage');
    expect(p.pageEnds).toMatch(/incremental passes filter the list \(\$updatedSince\)/);
    // Changed in 2026: every item but 12 to 16 — the second page short (5 of 10), the third full again.
    const since = '2026-01-01T00:00:00.000Z';
    const got: string[] = [];
    for await (const page of paginate(client, p.stream, {
      pageSize: 10,
      variables: { updatedSince: since },
    }))
      got.push(...page.records.map((r) => (r as { id: string }).id));
    const expected = Array.from({ length: 25 }, (_, i) => i).filter((i) => i < 12 || i > 16);
    expect(got).toEqual(expected.map((i) => `item-${i}`));
  });

  it('a collection too small to show how its pages end keeps hasNextPage', async () => {
    set('full', 1);
    const p = await discovered();
    expect(p.stream.document).toContain('hasNextPage');
    expect(p.pageEnds).toMatch(/too small to show it \(1 records\)/);
    const proof = await provePageEnds(client, p.stream);
    expect(proof.proved).toBe(false);
  });
});
