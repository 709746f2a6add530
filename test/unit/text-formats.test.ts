import fc from 'fast-check';
import { csvColumns } from '../../shared/exports/columns';
import { csvCell, encoderFor } from '../../shared/formats/text';
import { ConfigError } from '../../shared/errors';
import type { StreamDefinition } from '../../shared/streams';
import { resolveStreams } from '../../sandbox/streams';

/** A strict RFC 4180 reader, to check what a spreadsheet would see. */
function readCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else cell += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ',') {
      row.push(cell);
      cell = '';
    } else if (ch === '\r' && text[i + 1] === '\n') {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
      i++;
    } else cell += ch;
  }
  return rows;
}

const [controls] = resolveStreams({ select: ['controls'] });

describe('CSV columns', () => {
  it('come from the query: nested objects dotted, lists one column, aliases and fragments followed', () => {
    expect(csvColumns(controls)).toEqual([
      'id',
      'reference',
      'title',
      'description',
      'framework',
      'status',
      'owner.id',
      'owner.name',
      'owner.email',
      'tags',
      'updatedAt',
    ]);
    const custom = {
      ...controls,
      document:
        'query Q($first: Int, $after: String) { items(first: $first, after: $after) { edges { node { key: id ...F ... on Item { when } } } pageInfo { hasNextPage endCursor } } } fragment F on Item { who { name } }',
      paths: { ...controls.paths, records: 'items.edges' },
    } as StreamDefinition;
    expect(csvColumns(custom)).toEqual(['key', 'who.name', 'when']);
    expect(() =>
      csvColumns({ ...controls, paths: { ...controls.paths, records: 'nope.edges' } } as StreamDefinition),
    ).toThrow(ConfigError);
  });
});

describe('CSV cells', () => {
  it('flattens a record: dotted fields, empty for null, lists as JSON', () => {
    const e = encoderFor('csv', ['id', 'owner.name', 'tags', 'missing']);
    const text = e.start() + e.page([{ id: 'c1', owner: { name: 'Ada, "A"' }, tags: ['x', 'y'] }]) + e.end();
    expect(readCsv(text)).toEqual([
      ['id', 'owner.name', 'tags', 'missing'],
      ['c1', 'Ada, "A"', '["x","y"]', ''],
    ]);
  });

  it('neutralises formulas in text, not numbers', () => {
    expect(csvCell('=HYPERLINK("http://x")')).toBe(`"'=HYPERLINK(""http://x"")"`);
    expect(csvCell('@SUM(A1)')).toBe(`'@SUM(A1)`);
    expect(csvCell('-1+2')).toBe(`'-1+2`);
    expect(csvCell(-5)).toBe('-5');
    expect(csvCell(true)).toBe('true');
  });

  it('property: any text round-trips through a strict reader, and no cell can start a formula', () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.string({ unit: 'binary' }), { minLength: 2, maxLength: 2 })),
        (rows) => {
          const e = encoderFor('csv', ['a', 'b']);
          const text = e.start() + e.page(rows.map(([a, b]) => ({ a, b }))) + e.end();
          const read = readCsv(text);
          expect(read).toHaveLength(rows.length + 1);
          rows.forEach(([a, b], i) => {
            for (const [got, want] of [
              [read[i + 1][0], a],
              [read[i + 1][1], b],
            ]) {
              expect(got).toBe(/^[=+\-@\t\r]/.test(want) ? `'${want}` : want);
              expect(got).not.toMatch(/^[=+\-@\t\r]/);
            }
          });
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('JSON and NDJSON', () => {
  it('JSON is one valid array however the pages fall; NDJSON one record per line', () => {
    for (const pages of [[], [[]], [[{ a: 1 }], [{ a: 2 }, { a: 3 }]]]) {
      const e = encoderFor('json');
      const text = e.start() + pages.map((p) => e.page(p)).join('') + e.end();
      expect(JSON.parse(text)).toEqual(pages.flat());
    }
    const n = encoderFor('ndjson');
    expect(n.page([{ a: 1 }, { b: '\n' }])).toBe('{"a":1}\n{"b":"\\n"}\n');
  });
});
