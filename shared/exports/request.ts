import { createHash } from 'node:crypto';
import { z } from 'zod';
import { refusedCallbackUrl } from '../net/callback';
import type { Parsed } from '../net/accepted';
import { EXPORT_FORMATS, type ExportFormat } from './file';

/** The largest request body the export webhook reads. */
export const MAX_BODY_BYTES = 16 * 1024;

const bodySchema = z.strictObject({
  streams: z
    .array(z.string().min(1, 'must not be empty').max(100, 'at most 100 characters'))
    .min(1, 'must name at least one stream (leave it out for all)')
    .max(100, 'at most 100 streams')
    .optional(),
  format: z.enum(EXPORT_FORMATS, { error: `must be one of ${EXPORT_FORMATS.join(', ')}` }).optional(),
  gzip: z.boolean({ error: 'must be true or false' }).optional(),
  callbackUrl: z.string({ error: 'must be a string' }).max(2048, 'at most 2048 characters').optional(),
});

export interface ExportRequest {
  streams: string[];
  format: ExportFormat;
  gzip: boolean;
  callbackUrl?: string;
}

const problemsOf = (error: z.ZodError) =>
  error.issues.map((i) => `${i.path.length ? i.path.join('.') : 'body'}: ${i.message}`);

/**
 * Parses the webhook's body (empty means `{}`: every stream as NDJSON). Unknown fields are refused so a typo
 * does not silently export something else; unknown streams are named with the known ones.
 */
export function parseExportRequest(
  text: string,
  options: { knownStreams: string[]; development: boolean },
): Parsed<ExportRequest> {
  let json: unknown = {};
  if (text.trim()) {
    try {
      json = JSON.parse(text);
    } catch {
      return { ok: false, problems: ['body: not valid JSON'] };
    }
  }
  const result = bodySchema.safeParse(json);
  if (!result.success) return { ok: false, problems: problemsOf(result.error) };
  const body = result.data;
  const problems: string[] = [];
  const streams = [...new Set(body.streams ?? options.knownStreams)];
  const unknown = streams.filter((s) => !options.knownStreams.includes(s));
  if (unknown.length)
    problems.push(
      `streams: unknown stream${unknown.length > 1 ? 's' : ''} ${unknown.map((s) => JSON.stringify(s)).join(', ')}; known: ${options.knownStreams.join(', ')}`,
    );
  if (body.format === 'parquet' && body.gzip)
    problems.push('gzip: Parquet files are compressed inside (snappy); leave gzip out with format "parquet"');
  if (body.callbackUrl !== undefined) {
    const why = refusedCallbackUrl(body.callbackUrl, { development: options.development });
    if (why) problems.push(`callbackUrl: ${why}`);
  }
  if (problems.length) return { ok: false, problems };
  return {
    ok: true,
    value: {
      streams,
      format: body.format ?? 'ndjson',
      gzip: body.gzip ?? false,
      callbackUrl: body.callbackUrl,
    },
  };
}

/** The same request, whatever the order of its fields or defaults left out, hashes the same. */
export function requestHash(request: ExportRequest): string {
  const { streams, format, gzip, callbackUrl } = request;
  return createHash('sha256')
    .update(JSON.stringify([streams, format, gzip, callbackUrl ?? null]))
    .digest('hex');
}
