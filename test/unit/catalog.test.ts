import fc from 'fast-check';
import { buildSchema, parse, validate } from 'graphql';
import { proposeCatalog } from '../../shared/catalog/discover';
import { driftOf, propagate } from '../../shared/catalog/drift';
import { parseStreams } from '../../shared/streams';

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

const schemaArb = fc
  .record({
    types: fc.array(typeArb, { minLength: 6, maxLength: 6 }),
    roots: fc.array(rootArb, { minLength: 1, maxLength: 8 }),
  })
  .map(({ types, roots }) => {
    const T = (i: number) => `T${i}`;
    const sdl: string[] = [
      'scalar Json',
      'enum Kind { A B }',
      'type PageInfo { hasNextPage: Boolean! endCursor: String }',
    ];
    types.forEach((t, i) => {
      const fields = t.fields.map((f) => `${f.name}: ${f.type}${f.nonNull ? '!' : ''}`);
      t.refs.forEach((r, j) => fields.push(`ref${j}: ${r.list ? `[${T(r.to)}!]!` : T(r.to)}`));
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
          return `f${i}(first: Int = 25, after: String${since}): ${t}Connection!`;
        case 'nodes':
          return `f${i}(first: Int, after: String${since}): ${t}Nodes`;
        case 'offset':
          return `f${i}(${r.limit}: Int = 30, ${r.offset}: Int${since}): [${t}!]!`;
        case 'offsetTotal':
          return `f${i}(${r.limit}: Int, ${r.offset}: Int = 0): ${t}Feed!`;
        case 'page':
          return `f${i}(page: Int = 1, perPage: Int = 20): ${t}Page!`;
        case 'plain':
          return `f${i}: [${t}]`;
        case 'single':
          return `f${i}: ${t}`;
        case 'required':
          return `f${i}(id: ID!): [${t}!]!`;
        case 'scalars':
          return `f${i}: [String!]!`;
        default:
          return `f${i}(search: String): ${t}Connection`;
      }
    });
    sdl.push(`type Query { ${query.join(' ')} }`, 'type Mutation { change(id: ID!): T0 }');
    return { sdl: sdl.join('\n'), roots };
  });

describe('proposeCatalog over generated schemas', () => {
  it('never throws; every proposal is a valid stream whose document the schema accepts; never a required argument, a single object or a mutation', () => {
    fc.assert(
      fc.property(schemaArb, ({ sdl, roots }) => {
        const schema = buildSchema(sdl);
        const proposal = proposeCatalog(schema);
        const names = proposal.streams.map((p) => p.stream.name);
        expect(new Set(names).size).toBe(names.length);
        // Every proposal passes the streams file's own checks, and the schema validates its document.
        if (names.length) parseStreams({ streams: proposal.streams.map((p) => p.stream) }, 'the proposal');
        for (const p of proposal.streams) {
          expect(validate(schema, parse(p.stream.document))).toEqual([]);
          expect(p.fields).toBeGreaterThan(0);
        }
        // Every root field is accounted for: a stream or a reason.
        expect(names.length + proposal.skipped.length).toBe(roots.length);
        roots.forEach((r, i) => {
          const field = `f${i}`;
          const stream = proposal.streams.find((p) => p.stream.document.includes(` ${field}`));
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
