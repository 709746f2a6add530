import type { HttpRequest, HttpResponseInit } from '@azure/functions';
import { z } from 'zod';
import { problem } from '../errors';
import type { Host } from '../feature';
import { detailsOf, type RunKinds } from '../runs/kind';
import { runKindName, type RunSummary } from '../runs/summary';

/** A summary as the routes answer it: every run's fields, and its kind's details as its kind reads them. */
const shown = (kinds: RunKinds, s: RunSummary): RunSummary => ({ ...s, ...detailsOf(kinds[s.kind], s) });

/** What the run-history routes need of their host. */
export type RunsHost = Pick<Host, 'runs' | 'config' | 'runKinds'>;

/** The query, with `kind` one of the kinds of run the features declare. */
const listQuery = (kinds: readonly string[]) =>
  z
    .object({
      kind: runKindName.refine((k) => kinds.includes(k), `one of ${kinds.join(', ')}`).optional(),
      limit: z.coerce.number().int().min(1).max(100).default(20),
      before: z.iso.datetime().optional(),
    })
    .strict();

/** GET /api/manage/runs?kind=&limit=&before= — newest first; `next` pages on with `before`. */
export async function listRuns(request: HttpRequest, app: RunsHost): Promise<HttpResponseInit> {
  const parsed = listQuery(Object.keys(app.runKinds)).safeParse(Object.fromEntries(request.query.entries()));
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.') || 'query'}: ${i.message}`);
    return problem(400, 'invalid_request', problems.join('; '), { members: { problems } });
  }
  const runs = await app.runs().history.list(parsed.data);
  const last = runs.at(-1);
  const next =
    runs.length === parsed.data.limit && last
      ? `?${new URLSearchParams({ ...(parsed.data.kind ? { kind: parsed.data.kind } : {}), limit: String(parsed.data.limit), before: last.startedAt })}`
      : undefined;
  return { jsonBody: { runs: runs.map((r) => shown(app.runKinds, r)), ...(next ? { next } : {}) } };
}

/** GET /api/manage/runs/{id} */
export async function getRun(id: string | undefined, app: RunsHost): Promise<HttpResponseInit> {
  if (!id || id.length > 200) return problem(400, 'invalid_request', 'a run id is 1–200 characters');
  const run = await app.runs().history.get(id);
  return run
    ? { jsonBody: shown(app.runKinds, run) }
    : problem(404, 'not_found', `no run ${id} in the last ${app.config.runHistoryDays} days`);
}
