/*
 * A run's mark in a table's log: the `txn` action's application id (the app and its tenant) and version (the run).
 */

/**
 * The run's mark in a table's log (the `txn` action's version): its start in milliseconds, which the run id begins
 * with. Runs of a tenant follow one another, so a later run has a greater mark, and a run resumed keeps its id.
 */
export function runVersion(runId: string): number {
  const m = /^(\d{4}-\d{2}-\d{2})T(\d{2})-(\d{2})-(\d{2})-(\d{3})Z/.exec(runId);
  const ms = m ? Date.parse(`${m[1]}T${m[2]}:${m[3]}:${m[4]}.${m[5]}Z`) : NaN;
  if (!Number.isFinite(ms))
    throw new Error(
      `the delta sink needs a run id that begins with its start time (got ${JSON.stringify(runId)})`,
    );
  return ms;
}

export const ENGINE = 'tenant-integrations';
/**
 * The writer's name in a table's `txn`: the app and its tenant. Apps of several tenants may share a table (their keys
 * differ); each has its own mark, and their commits race only for versions.
 */
export const appIdOf = (tenant: string) => `${ENGINE}/${tenant}`;
