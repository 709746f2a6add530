import { StringDecoder } from 'node:string_decoder';

/**
 * The lines of a text stream, read as the consumer asks for them. Buffers are decoded as UTF-8 across chunk
 * boundaries (a character split between two chunks stays whole).
 */
export async function* linesOf(chunks: AsyncIterable<string | Buffer>): AsyncGenerator<string> {
  const decoder = new StringDecoder('utf8');
  let rest = '';
  for await (const chunk of chunks) {
    const parts = (rest + (typeof chunk === 'string' ? chunk : decoder.write(chunk))).split('\n');
    rest = parts.pop() ?? '';
    yield* parts;
  }
  rest += decoder.end();
  if (rest) yield rest;
}

/** NDJSON lines as pages of parsed values, at most `size` per page (empty lines skipped). */
export async function* jsonPages<T>(
  lines: AsyncIterable<string> | Iterable<string>,
  size = 1000,
): AsyncGenerator<T[]> {
  let page: T[] = [];
  for await (const line of lines) {
    if (!line) continue;
    page.push(JSON.parse(line) as T);
    if (page.length >= size) {
      yield page;
      page = [];
    }
  }
  if (page.length) yield page;
}
