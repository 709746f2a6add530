import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import fc from 'fast-check';
import { snappyCompress } from '../../shared/formats/parquet/snappy';

/**
 * Our snappy against hyparquet-writer's own (the one it replaces) and hyparquet's decoder (an independent one), both
 * ES modules, so in a process of their own: for every input the same bytes as the writer's compressor, and the input
 * back from the reader's decoder.
 */
const lib = (p: string) => pathToFileURL(resolve(__dirname, '../../node_modules', p)).href;

function theirs(inputs: Uint8Array[], ours: Uint8Array[]): { same: boolean[]; back: boolean[] } {
  const script = `
    import { snappyCompress } from ${JSON.stringify(lib('hyparquet-writer/src/snappy.js'))};
    import { snappyUncompress } from ${JSON.stringify(lib('hyparquet/src/snappy.js'))};
    import { readFileSync } from 'node:fs';
    const { inputs, ours } = JSON.parse(readFileSync(0, 'utf8'));
    const bytes = (b64) => new Uint8Array(Buffer.from(b64, 'base64'));
    const same = [], back = [];
    inputs.forEach((b64, i) => {
      const input = bytes(b64);
      const mine = bytes(ours[i]);
      same.push(Buffer.from(snappyCompress(input)).equals(mine));
      const out = new Uint8Array(input.length);
      try { snappyUncompress(mine, out); back.push(Buffer.from(out).equals(input)); } catch { back.push(false); }
    });
    process.stdout.write(JSON.stringify({ same, back }));`;
  const b64 = (u: Uint8Array) => Buffer.from(u).toString('base64');
  return JSON.parse(
    execFileSync(process.execPath, ['--input-type=module', '-e', script], {
      input: JSON.stringify({ inputs: inputs.map(b64), ours: ours.map(b64) }),
      maxBuffer: 256 << 20,
    }).toString(),
  ) as { same: boolean[]; back: boolean[] };
}

/** Bytes like a Parquet page's: random, text with repeats, long runs, JSON rows — small, and past 64 KiB offsets. */
const pages = fc.oneof(
  fc.uint8Array({ maxLength: 300 }),
  fc.uint8Array({ minLength: 60_000, maxLength: 140_000 }),
  fc
    .array(
      fc.constantFrom('ctl-00001', '{"id":', '"status":"open"', ' ', 'A.11.6', '\u00fc\u{1F600}', '\n'),
      {
        maxLength: 20_000,
      },
    )
    .map((parts) => new Uint8Array(Buffer.from(parts.join('')))),
  fc
    .tuple(fc.integer({ min: 0, max: 255 }), fc.integer({ min: 1, max: 200_000 }))
    .map(([b, n]) => new Uint8Array(n).fill(b)),
  fc
    .tuple(fc.uint8Array({ minLength: 1, maxLength: 70 }), fc.integer({ min: 1, max: 5_000 }))
    .map(([unit, times]) => new Uint8Array(Buffer.concat(Array.from({ length: times }, () => unit)))),
);

describe('snappy for the Parquet writer', () => {
  it("compresses every input to the bytes hyparquet-writer's compressor makes, and hyparquet's decoder gives it back", () => {
    const inputs = [
      new Uint8Array(0),
      new Uint8Array([1]),
      new Uint8Array(15),
      ...fc.sample(pages, { numRuns: 300, seed: 20261125 }),
      // Views into larger buffers with other bytes around them (as a writer's pages may be): nothing past the view's
      // end may count — the writer's compressor reads a byte there as 0.
      ...fc.sample(pages, { numRuns: 60, seed: 20261126 }).map((page) => {
        const around = new Uint8Array(page.length + 64).fill(0xab);
        around.set(page, 32);
        return around.subarray(32, 32 + page.length);
      }),
    ];
    const ours = inputs.map((i) => snappyCompress(i));
    const { same, back } = theirs(inputs, ours);
    const differ = inputs.map((i, n) => (same[n] && back[n] ? null : i.length)).filter((n) => n !== null);
    expect(differ).toEqual([]);
    expect(same).toHaveLength(inputs.length);
  });

  it('compresses what repeats: a page of one record over and over is a small fraction of its size', () => {
    const row = Buffer.from('{"id":"ctl-0000001","status":"implemented","framework":"ISO 27001:2022"}');
    const page = new Uint8Array(Buffer.concat(Array.from({ length: 2000 }, () => row)));
    expect(snappyCompress(page).length).toBeLessThan(page.length / 10);
  });
});
