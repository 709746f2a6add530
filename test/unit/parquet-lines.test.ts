import { jsonPages, linesOf } from '../../shared/formats/lines';

async function* chunks(...parts: Array<string | Buffer>) {
  yield* parts;
}
const all = async <T>(it: AsyncIterable<T>) => {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
};

describe('reading change files back for Parquet', () => {
  it('a UTF-8 character split between two chunks stays whole', async () => {
    const bytes = Buffer.from('{"name":"Zoë"}\n{"name":"Noël"}\n');
    const at = bytes.indexOf(Buffer.from('ë')) + 1; // inside the two-byte ë
    expect(await all(linesOf(chunks(bytes.subarray(0, at), bytes.subarray(at))))).toEqual([
      '{"name":"Zoë"}',
      '{"name":"Noël"}',
    ]);
  });

  it('lines become pages of parsed values, empty lines skipped, the last line without a newline kept', async () => {
    const pages = await all(jsonPages(linesOf(chunks('{"a":1}\n\n{"a":2}\n{"a', '":3}')), 2));
    expect(pages).toEqual([[{ a: 1 }, { a: 2 }], [{ a: 3 }]]);
  });
});
