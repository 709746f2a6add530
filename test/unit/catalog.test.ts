import fc from 'fast-check';
import { buildSchema, introspectionFromSchema, parse, validate, type GraphQLSchema } from 'graphql';
import { proposeCatalog } from '../../shared/catalog/discover';
import { SELECTION_LEAVES } from '../../shared/catalog/selection';
import { driftOf, invalidTouched, propagate } from '../../shared/catalog/drift';
import { introspect, schemaProblems } from '../../shared/catalog/introspect';
import type { TenantGraphqlClient } from '../../shared/graphql/client';
import { parseStreams } from '../../shared/streams';
import { catalogJson, runCatalog } from '../../shared/catalog';

/**
 * Discovery and drift against schemas nobody designed for us: generated ones (fast-check) with every way of paging a
 * collection we know, several we do not, keys or none, cycles, and root fields that are not collections.
 */

const SCALARS = ['ID', 'String', 'Int', 'Float', 'Boolean', 'Kind', '[String!]', 'Json'];
const FIELD_NAMES = [
  'id',
  'uuid',
  'key',
  'name',
  'title',
  'value',
  'updatedAt',
  'createdOn',
  'state',
  'amount',
  'a_b',
];
const LIMIT_NAMES = ['limit', 'first', 'take', 'size', 'top', 'howMany'];
const OFFSET_NAMES = ['offset', 'skip', 'start', 'from', 'cursorless'];
const KNOWN_LIMITS = ['limit', 'first', 'take', 'size', 'top'];
const KNOWN_OFFSETS = ['offset', 'skip', 'start', 'from'];

const typeArb = fc.record({
  fields: fc.uniqueArray(
    fc.record({
      name: fc.constantFrom(...FIELD_NAMES),
      type: fc.constantFrom(...SCALARS),
      nonNull: fc.boolean(),
    }),
    {
      minLength: 1,
      maxLength: 6,
      selector: (f) => f.name,
    },
  ),
  /** Fields pointing at other generated types (by index), single or list: nesting and cycles. */
  refs: fc.array(fc.record({ to: fc.nat(5), list: fc.boolean() }), { maxLength: 3 }),
});

const rootArb = fc.record({
  type: fc.nat(5),
  kind: fc.constantFrom(
    'edges',
    'nodes',
    'offset',
    'offsetTotal',
    'page',
    'plain',
    'single',
    'required',
    'scalars',
    'odd',
  ),
  limit: fc.constantFrom(...LIMIT_NAMES),
  offset: fc.constantFrom(...OFFSET_NAMES),
  since: fc.boolean(),
});

/** The oddities other stacks serve: a type whose fields fan out, a type without fields, root names past 63. */
const oddArb = fc.record({ fanOut: fc.boolean(), empty: fc.boolean(), longNames: fc.boolean() });
const FAN = 40; // 40 × 40 × 40 = 64 000 leaves below one record, from three types

const schemaArb = fc
  .record({
    types: fc.array(typeArb, { minLength: 6, maxLength: 6 }),
    roots: fc.array(rootArb, { minLength: 1, maxLength: 8 }),
    odd: oddArb,
  })
  .map(({ types, roots, odd }) => {
    const T = (i: number) => `T${i}`;
    // Long names share their first 63 characters: a stream name is cut there.
    const field = (i: number) => (odd.longNames ? `${'q'.repeat(63)}_${i}` : `f${i}`);
    const sdl: string[] = [
      'scalar Json',
      'enum Kind { A B }',
      'type PageInfo { hasNextPage: Boolean! endCursor: String }',
    ];
    const many = (prefix: string, type: string) =>
      Array.from({ length: FAN }, (_, i) => `${prefix}${i}: ${type}`).join(' ');
    if (odd.fanOut)
      sdl.push(
        `type FanLeaf { ${many('l', 'Int')} }`,
        `type FanMid { ${many('m', 'FanLeaf')} }`,
        `type Fan { id: ID! ${many('f', 'FanMid')} }`,
      );
    if (odd.empty) sdl.push('type Leeg');
    types.forEach((t, i) => {
      const fields = t.fields.map((f) => `${f.name}: ${f.type}${f.nonNull ? '!' : ''}`);
      t.refs.forEach((r, j) => fields.push(`ref${j}: ${r.list ? `[${T(r.to)}!]!` : T(r.to)}`));
      if (odd.fanOut) fields.push('fan: Fan');
      if (odd.empty) fields.push('leeg: Leeg');
      sdl.push(`type ${T(i)} { ${fields.join(' ')} }`);
      sdl.push(`type ${T(i)}Edge { cursor: String! node: ${T(i)}! }`);
      sdl.push(`type ${T(i)}Connection { edges: [${T(i)}Edge!]! pageInfo: PageInfo! totalCount: Int }`);
      sdl.push(`type ${T(i)}Nodes { nodes: [${T(i)}!]! pageInfo: PageInfo! }`);
      sdl.push(`type ${T(i)}Page { items: [${T(i)}!]! total: Int! page: Int! }`);
      sdl.push(`type ${T(i)}Feed { results: [${T(i)}!]! totalCount: Int! }`);
    });
    const query = roots.map((r, i) => {
      const t = T(r.type);
      const since = r.since ? ', updatedSince: String' : '';
      switch (r.kind) {
        case 'edges':
          return `${field(i)}(first: Int = 25, after: String${since}): ${t}Connection!`;
        case 'nodes':
          return `${field(i)}(first: Int, after: String${since}): ${t}Nodes`;
        case 'offset':
          return `${field(i)}(${r.limit}: Int = 30, ${r.offset}: Int${since}): [${t}!]!`;
        case 'offsetTotal':
          return `${field(i)}(${r.limit}: Int, ${r.offset}: Int = 0): ${t}Feed!`;
        case 'page':
          return `${field(i)}(page: Int = 1, perPage: Int = 20): ${t}Page!`;
        case 'plain':
          return `${field(i)}: [${t}]`;
        case 'single':
          return `${field(i)}: ${t}`;
        case 'required':
          return `${field(i)}(id: ID!): [${t}!]!`;
        case 'scalars':
          return `${field(i)}: [String!]!`;
        default:
          return `${field(i)}(search: String): ${t}Connection`;
      }
    });
    sdl.push(`type Query { ${query.join(' ')} }`, 'type Mutation { change(id: ID!): T0 }');
    return { sdl: sdl.join('\n'), roots, field };
  });

describe('proposeCatalog over generated schemas', () => {
  it('never throws; every proposal is a valid stream whose document the schema accepts; never a required argument, a single object or a mutation', () => {
    fc.assert(
      fc.property(schemaArb, ({ sdl, roots, field: fieldOf }) => {
        // As introspect() takes it: valid or not (a type without fields), as servers on other stacks serve it.
        const schema = buildSchema(sdl, { assumeValid: true });
        const proposal = proposeCatalog(schema);
        const names = proposal.streams.map((p) => p.stream.name);
        expect(new Set(names).size).toBe(names.length);
        for (const n of names) expect(n.length).toBeLessThanOrEqual(63);
        // Every proposal passes the streams file's own checks, and the schema validates its document.
        if (names.length) parseStreams({ streams: proposal.streams.map((p) => p.stream) }, 'the proposal');
        for (const p of proposal.streams) {
          expect(validate(schema, parse(p.stream.document))).toEqual([]);
          expect(p.fields).toBeGreaterThan(0);
          // A fan-out is cut at the budget, counted before descending; a type without fields is never selected.
          expect(p.fields).toBeLessThanOrEqual(SELECTION_LEAVES);
          expect(p.stream.document).not.toMatch(/\bleeg\b/);
        }
        // Every root field is accounted for: a stream or a reason.
        expect(names.length + proposal.skipped.length).toBe(roots.length);
        roots.forEach((r, i) => {
          const field = fieldOf(i);
          const stream = proposal.streams.find(
            (p) => p.stream.document.includes(` ${field}(`) || p.stream.document.includes(` ${field} `),
          );
          if (['single', 'required', 'scalars'].includes(r.kind)) expect(stream).toBeUndefined();
          if (['edges', 'nodes'].includes(r.kind)) expect(stream?.stream.pagination).toBe('cursor');
          if (r.kind === 'page') expect(stream?.stream.pagination).toBe('page');
          if (r.kind === 'plain') expect(stream?.stream.pagination).toBe('none');
          // Offsets discovery knows how to pair are read as offsets; any other paging is left out, said why —
          // never read as one answer that would stop at the server's first page.
          const known = KNOWN_LIMITS.includes(r.limit) && KNOWN_OFFSETS.includes(r.offset);
          if (r.kind === 'offsetTotal' || r.kind === 'offset')
            if (known) expect(stream?.stream.pagination).toBe('offset');
            else {
              expect(stream).toBeUndefined();
              expect(proposal.skipped.find((s) => s.field === field)?.reason).toMatch(/pages in a way/);
            }
          if (r.kind === 'odd') expect(stream).toBeUndefined();
        });
        expect(proposal.streams.some((p) => p.stream.document.includes('change('))).toBe(false);
      }),
      { numRuns: 300 },
    );
  });

  it('keys: an ID field, else a unique-looking scalar (said so), else none — and says what none means', () => {
    const schema = buildSchema(`
      type A { id: ID! name: String }
      type B { uuid: String! name: String }
      type C { name: String value: Int }
      type Query { a: [A!]! b: [B!]! c: [C!]! }
    `);
    const p = Object.fromEntries(proposeCatalog(schema).streams.map((s) => [s.stream.name, s]));
    expect(p.a.stream.idPath).toBe('id');
    expect(p.b.stream.idPath).toBe('uuid');
    expect(p.b.key).toMatch(/check that it is unique/);
    expect(p.c.stream.idPath).toBe('');
    expect(p.c.key).toMatch(/deletion|update/i);
  });

  it('keys a record by its own identifier, never by the ID of another record it points at', () => {
    const schema = buildSchema(`
      type Bewijs { maatregelId: ID! uuid: String! titel: String }
      type Taak { taakId: ID! projectId: ID! naam: String }
      type Link { fromId: ID! toId: ID! }
      type Query { bewijzen: [Bewijs!]! taken: [Taak!]! links: [Link!]! }
    `);
    const p = Object.fromEntries(proposeCatalog(schema).streams.map((s) => [s.stream.name, s]));
    expect(p.bewijzen.stream.idPath).toBe('uuid');
    expect(p.taken.stream.idPath).toBe('taakId');
    expect(p.taken.key).toMatch(/own ID field/);
    // Only references: one is taken, and the proposal says what to check.
    expect(p.links.stream.idPath).toBe('fromId');
    expect(p.links.key).toMatch(/refers to another record/);
  });
});

describe('drift', () => {
  const before = buildSchema(`
    type Item { id: ID! name: String! size: Int secret: String }
    type Query { items: [Item!]! }
  `);
  const stream = proposeCatalog(before).streams[0].stream;

  it('names what went, what came, and honours what the stream chose to leave out', () => {
    const after = buildSchema(`
      type Item { id: ID! name: String! colour: String secret: String }
      type Query { items: [Item!]! }
    `);
    expect(driftOf(after, stream)).toMatchObject({ removed: ['size'], added: ['colour'] });
    const excluded = parseStreams({ streams: [{ ...stream, exclude: ['colour'] }] }, 'test')[0];
    expect(driftOf(after, excluded).added).toEqual([]);
    const { stream: next, applied } = propagate(after, stream, driftOf(after, stream));
    expect(applied).toEqual({ added: ['colour'], removed: ['size'] });
    expect(validate(after, parse(next.document))).toEqual([]);
    expect(driftOf(after, next)).toMatchObject({ removed: [], added: [] });
  });

  it('a collection field gone is a problem, not a field to drop', () => {
    const after = buildSchema(`type Item { id: ID! } type Query { things: [Item!]! }`);
    expect(driftOf(after, stream).problems.join(' ')).toMatch(/items/);
  });
});

/** A tenant whose introspection answers this schema (taken as valid, as servers on other stacks serve it). */
const tenantServing = (schema: GraphQLSchema) =>
  ({
    endpoint: 'https://tenant.example/graphql',
    request: async () => introspectionFromSchema(schema),
  }) as unknown as TenantGraphqlClient;

/** Streams of one answer each, reading `document` from the root field of their name. */
const unpaged = (...streams: Array<[name: string, document: string]>) =>
  parseStreams(
    {
      streams: streams.map(([name, document]) => ({
        name,
        pagination: 'none',
        document,
        paths: { records: name },
      })),
    },
    'test',
  );

describe('a schema graphql-js calls invalid, as servers on other stacks serve it', () => {
  const sdl = `
    type Leeg
    type Item { id: ID! name: String leeg: Leeg }
    type Query { items: [Item!]! other: [Item!]! leeg: Leeg }
  `;
  const tenant = () => tenantServing(buildSchema(sdl, { assumeValid: true }));

  it('is read, its problems named once with the type they are about', async () => {
    const schema = await introspect(tenant());
    expect(schemaProblems(schema)).toEqual([
      { type: 'Leeg', message: 'Type Leeg must define one or more fields.' },
    ]);
    // Discovery never selects the type; the streams it proposes are untouched by the problem.
    for (const p of proposeCatalog(schema).streams) {
      expect(p.stream.document).not.toMatch(/\bleeg\b/);
      expect(invalidTouched(schema, p.stream, schemaProblems(schema))).toEqual([]);
      expect(driftOf(schema, p.stream).problems).toEqual([]);
    }
  });

  it('a stream that selects the invalid type is the only one touched; checking it never throws', async () => {
    const schema = await introspect(tenant());
    const [reads, clean] = unpaged(
      ['items', 'query Items { items { id leeg { __typename } } }'],
      ['other', 'query Other { other { id name } }'],
    );
    expect(invalidTouched(schema, reads, schemaProblems(schema))).toEqual([
      { type: 'Leeg', message: 'Type Leeg must define one or more fields.' },
    ]);
    expect(invalidTouched(schema, clean, schemaProblems(schema))).toEqual([]);
    expect(() => driftOf(schema, reads)).not.toThrow();
  });
});

describe('SYNC_SCHEMA_CHANGES=propagate, stream by stream', () => {
  it('a stream whose adoption does not fit (its key field gone) is held back alone; the others adopt', async () => {
    const now = buildSchema(`
      type Item { name: String size: Int }
      type Other { id: ID! name: String colour: String }
      type Query { items: [Item!]! others: [Other!]! }
    `);
    const streams = unpaged(
      ['items', 'query I { items { id name } }'],
      ['others', 'query O { others { id name } }'],
    );
    let written = '';
    const catalog = await runCatalog({
      graphql: tenantServing(now),
      state: {
        readCatalog: async () => catalogJson(streams, '2026-11-27T00:00:00.000Z'),
        writeCatalog: async (_tenant, json) => void (written = json),
      },
      tenant: 'acme',
      schemaChanges: 'propagate',
      personal: 'hash',
      now: () => Date.parse('2026-11-27T01:00:00.000Z'),
    });
    // `items` lost its key (`id`): taking it out leaves no key to read by — held back, naming why.
    expect(catalog.blocked.items).toMatchObject({ code: 'schema_drift' });
    expect(catalog.blocked.items.message).toMatch(/no longer has id.*Its adoption did not fit/);
    // `others` gained a field: adopted, and the stored catalog says so.
    expect(catalog.changes).toEqual([{ stream: 'others', added: ['colour'], removed: [] }]);
    expect(catalog.blocked.others).toBeUndefined();
    expect(written).toContain('colour');
  });
});
