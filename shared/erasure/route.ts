import type { HttpRequest, HttpResponseInit } from '@azure/functions';
import { z } from 'zod';
import { problem } from '../errors';
import type { Host } from '../feature';
import { readJsonText } from '../net/accepted';
import { createSink, tracedSink } from '../sinks';
import { runErasure } from './run';

/** The largest body POST /api/manage/erasures reads: a stream, a key (4 KiB at most) and who asked. */
export const MAX_ERASE_BODY_BYTES = 8 * 1024;

const bodySchema = z.strictObject({
  stream: z.string().regex(/^[\w-]{1,63}$/, 'a stream name: letters, digits, dash or underscore (1-63)'),
  key: z
    .string({ error: 'the record’s key as the changes carry it (`id`)' })
    .min(1, 'must not be empty')
    .max(4096, 'at most 4096 characters'),
  by: z.string().min(1, 'must not be empty').max(200, 'at most 200 characters'),
});

/**
 * POST /api/manage/erasures (admin key) `{stream, key, by}`: the record erased from every sink of SYNC_SINKS, in this
 * request (docs/personal-data.md, "Erasure"), and its run in the history. 200 with the run's summary when every
 * sink could erase; 207 when a sink sent the record where the app cannot reach (the places are named); a problem
 * document when the erasure failed (its run says so too).
 */
export async function eraseRoute(
  request: HttpRequest,
  host: Pick<Host, 'config' | 'access' | 'clock' | 'logger' | 'runs'>,
): Promise<HttpResponseInit> {
  const read = await readJsonText(request, MAX_ERASE_BODY_BYTES);
  if ('refused' in read) return read.refused;
  let json: unknown;
  try {
    json = JSON.parse(read.text || '{}');
  } catch {
    return problem(400, 'invalid_request', 'the body is not JSON', {
      members: { problems: ['body: not JSON'] },
    });
  }
  const parsed = bodySchema.safeParse(json);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`);
    return problem(400, 'invalid_request', problems.join('; '), { members: { problems } });
  }
  const { config } = host;
  const sink = tracedSink(createSink(config.sinkSpecs, { config, secrets: host.access().secrets }));
  try {
    const summary = await runErasure(
      sink,
      { tenant: host.access().tenant.name, ...parsed.data, trigger: 'request' },
      { clock: host.clock, logger: host.logger, save: (s) => host.runs().save(s) },
    );
    if (summary.error)
      return problem(502, summary.error.code, summary.error.message, { members: { runId: summary.id } });
    return { status: summary.erase.unreachable?.length ? 207 : 200, jsonBody: summary };
  } finally {
    await sink.close();
  }
}
