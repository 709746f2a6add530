import { pathGetter } from '../streams/paths';

/** The formats written as text, page by page (Parquet is written by ./parquet/). */
export type TextFormat = 'ndjson' | 'csv' | 'json';

/** Turns pages of records into the text of one file, piece by piece (nothing holds the whole export). */
export interface RecordEncoder {
  start(): string;
  page(records: unknown[]): string;
  end(): string;
  /** Whether a record has been written (this slice's or, continuing, an earlier slice's). */
  written(): boolean;
}

/**
 * `continuing`: the file was begun earlier (an earlier slice of an export), so its start (CSV's
 * header, JSON's `[`) is not written again, and JSON's next record follows a comma if one was written before.
 */
export function encoderFor(
  format: TextFormat,
  columns: string[] = [],
  options: { continuing?: { written: boolean } } = {},
): RecordEncoder {
  const continuing = options.continuing;
  let any = continuing?.written ?? false;
  const written = () => any;
  if (format === 'ndjson')
    return {
      start: () => '',
      page: (rs) => {
        if (rs.length) any = true;
        return rs.map((r) => `${JSON.stringify(r)}\n`).join('');
      },
      end: () => '',
      written,
    };
  if (format === 'json') {
    let first = !any;
    return {
      written,
      start: () => (continuing ? '' : '['),
      page: (rs) =>
        rs
          .map((r) => {
            const s = `${first ? '\n' : ',\n'}${JSON.stringify(r)}`;
            first = false;
            any = true;
            return s;
          })
          .join(''),
      end: () => (first ? ']\n' : '\n]\n'),
    };
  }
  const cells = columns.map(pathGetter);
  return {
    start: () => (continuing ? '' : `${columns.map(csvCell).join(',')}\r\n`),
    page: (rs) => {
      if (rs.length) any = true;
      return rs.map((r) => `${cells.map((cell) => csvCell(cellValue(cell(r)))).join(',')}\r\n`).join('');
    },
    end: () => '',
    written,
  };
}

/** A record field as CSV text: null and missing are empty, lists and objects JSON, the rest as is. */
function cellValue(v: unknown): string | number | boolean {
  if (v === null || v === undefined) return '';
  if (typeof v === 'object') return JSON.stringify(v);
  return v as string | number | boolean;
}

/**
 * RFC 4180 quoting, and safe to open in a spreadsheet: text that a spreadsheet would run as a formula
 * (starting with = + - @, tab or carriage return) gets a leading apostrophe (OWASP's advice). Numbers and
 * booleans are written as they are — `-5` the number is not a formula.
 */
export function csvCell(v: string | number | boolean): string {
  if (typeof v !== 'string') return String(v); // no comma, quote or line break in a number or a boolean
  let s = v;
  if (/^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}
