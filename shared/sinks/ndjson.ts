import { changeJson, type Change } from '../changes';

/** A page's changes as NDJSON, one change per line: what the folder and blob sinks store. */
export const ndjson = (changes: Change[]) => changes.map((c) => `${changeJson(c)}\n`).join('');

/** A page's file and block name: its number, zero-padded so names sort in page order. */
export const pageName = (page: number) => String(page).padStart(8, '0');

/** Parquet output loads on first use: only SYNC_FORMAT=parquet pays for the writer. */
export const parquet = () =>
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  require('../formats/parquet') as typeof import('../formats/parquet');
