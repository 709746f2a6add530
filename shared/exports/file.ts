import { z } from 'zod';

/** What an export writes: a file per stream, in one of these formats, and how each file is described. */
export const EXPORT_FORMATS = ['ndjson', 'csv', 'json', 'parquet'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** Parquet compresses inside (snappy): it is never gzipped. */
export const extensionOf = (format: ExportFormat, gzip: boolean) =>
  format === 'parquet' ? 'parquet' : `${format}${gzip ? '.gz' : ''}`;

/** What each format is served as. */
export const contentTypeOf = (format: ExportFormat, gzip: boolean): string =>
  gzip && format !== 'parquet' ? 'application/gzip' : CONTENT_TYPES[format];

const CONTENT_TYPES: Record<ExportFormat, string> = {
  ndjson: 'application/x-ndjson; charset=utf-8',
  csv: 'text/csv; charset=utf-8',
  json: 'application/json; charset=utf-8',
  parquet: 'application/vnd.apache.parquet',
};

/** A stored file, as the manifest, the status and a finished slice describe it. */
export const fileSchema = z.object({
  stream: z.string(),
  /** Blob name inside the `exports` container: `{id}/{stream}.{ext}`. */
  name: z.string(),
  records: z.number(),
  bytes: z.number(),
  sha256: z.string(),
  /** Activities the file took (ACTIVITY_SLICE_SECONDS each at most); absent in exports before slicing. */
  slices: z.number().int().optional(),
});
export type StoredFile = z.infer<typeof fileSchema>;
