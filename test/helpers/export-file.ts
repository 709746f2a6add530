import { gunzipSync } from 'node:zlib';

/**
 * Reads an export file back the way a downstream tool would: NDJSON line by line, JSON as one array, CSV as a
 * header and CRLF rows. Throws if a line or the array is not JSON; `records` is what the file holds.
 */
export function readExportFile(
  bytes: Buffer,
  format: string,
  gzip: boolean,
): { records: number; header?: string } {
  const text = (gzip ? gunzipSync(bytes) : bytes).toString('utf8');
  if (format === 'ndjson')
    return {
      records: text
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as unknown).length,
    };
  if (format === 'json') {
    const array: unknown = JSON.parse(text);
    if (!Array.isArray(array)) throw new Error('a JSON export is not an array');
    return { records: array.length };
  }
  const [header, ...rows] = text.trimEnd().split('\r\n');
  return { records: rows.length, header };
}
