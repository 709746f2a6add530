import type { Host } from '../host';
import { nextOccurrence, parseNcrontab } from '../ncrontab';
import type { RunSummary } from '../runs/summary';
import { healthReport } from './health';
import { when, type StatusPart, type StatusView } from './status-page';

function lastRunPart(name: string, run: RunSummary | undefined, none: string): StatusPart {
  if (!run) return { name, state: 'unknown', detail: none };
  if (run.outcome === 'running') return { name, state: 'ok', detail: `running since ${when(run.startedAt)}` };
  if (run.outcome === 'succeeded')
    return { name, state: 'ok', detail: `succeeded, finished ${when(run.finishedAt ?? run.startedAt)}` };
  return {
    name,
    state: 'fail',
    detail: `failed at ${when(run.finishedAt ?? run.startedAt)}: ${run.error?.message ?? 'see its details'}${run.error?.action ? ` — ${run.error.action}` : ''}`,
  };
}

/** What the status page shows: each part's health, and the recent runs (never a secret or token). */
/** What the status page reads: the configuration, the clock, the run history, the access layer (health). */
export type StatusHost = Pick<Host, 'config' | 'clock' | 'runs' | 'access' | 'logger' | 'runKinds'>;

export async function statusView(app: StatusHost, adminHref: string): Promise<StatusView> {
  const now = app.clock.now();
  let runs: RunSummary[] = [];
  let storage: StatusPart;
  try {
    runs = await app.runs().history.list({ limit: 30 });
    storage = { name: 'Storage', state: 'ok', detail: 'run history readable' };
  } catch (err) {
    storage = {
      name: 'Storage',
      state: 'fail',
      detail: `run history unreadable (${(err as Error).message.split('\n')[0]}): check AzureWebJobsStorage and the identity’s Storage Table Data Contributor role`,
    };
  }
  const health = await healthReport(app);
  const lastSync =
    runs.find((r) => r.kind === 'sync' && r.outcome !== 'running') ?? runs.find((r) => r.kind === 'sync');
  const lastExport = runs.find((r) => r.kind === 'export');
  const lastImport = runs.find((r) => r.kind === 'import');
  // The latest sync that says something about the credential: one that succeeded, or one it failed.
  const rejected = (r: RunSummary | undefined) => r?.error?.code.toLowerCase() === 'credential_rejected';
  const telling = runs.find((r) => r.kind === 'sync' && (r.outcome === 'succeeded' || rejected(r)));
  const credential: StatusPart =
    telling?.error && rejected(telling)
      ? { name: 'Credential', state: 'fail', detail: telling.error.action ?? telling.error.message }
      : telling
        ? { name: 'Credential', state: 'ok', detail: `accepted in the sync of ${when(telling.startedAt)}` }
        : {
            name: 'Credential',
            state: 'unknown',
            detail: 'no sync has used it yet (`tenant-integrations doctor` checks it now)',
          };
  const session = health.delegatedSession;
  const sessionPart: StatusPart =
    session === 'connected'
      ? { name: 'Delegated session', state: 'ok', detail: 'connected' }
      : session === 'login-required'
        ? {
            name: 'Delegated session',
            state: 'fail',
            detail: 'needs a new login: sign in again on the admin page',
          }
        : {
            name: 'Delegated session',
            state: 'warn',
            detail: `${session}: no admin is signed in, so mutations are unavailable`,
          };
  let next: StatusPart;
  const schedule = app.runKinds.sync?.schedule?.(app.config) ?? '';
  try {
    const at = nextOccurrence(parseNcrontab(schedule), now);
    next = {
      name: 'Next scheduled sync',
      state: 'ok',
      detail: `${when(new Date(at).toISOString())} (${schedule})`,
    };
  } catch {
    next = {
      name: 'Next scheduled sync',
      state: 'fail',
      detail: `SYNC_SCHEDULE "${schedule}" is not a valid NCRONTAB`,
    };
  }
  return {
    tenant: health.tenant ?? '',
    generatedAt: new Date(now).toISOString(),
    adminHref,
    runs,
    parts: [
      credential,
      sessionPart,
      lastRunPart('Last sync', lastSync, 'no sync yet'),
      next,
      lastRunPart('Last export', lastExport, 'no export yet'),
      ...(lastImport?.items?.waitingForAdmin && lastImport.outcome === 'running'
        ? [
            {
              name: 'Import',
              state: 'fail' as const,
              detail: `import ${lastImport.id} waits for ${lastImport.items.person ?? 'an admin'} to sign in again (the admin page); it resumes within a minute of that`,
            },
          ]
        : lastImport?.items?.waitingForTenant && lastImport.outcome === 'running'
          ? [
              {
                name: 'Import',
                state: 'warn' as const,
                detail: `import ${lastImport.id} waits for the tenant to answer again (${lastImport.items.waitingForTenant.reason}); its items not sent go then`,
              },
            ]
          : [lastRunPart('Last import', lastImport, 'no import yet')]),
      {
        name: 'Secret store',
        state: 'ok',
        detail:
          health.secretStore === 'key-vault'
            ? `Key Vault ${app.config.keyVaultUrl ?? ''}`.trim()
            : `development secret file (${app.config.localSecretsFile})`,
      },
      storage,
    ],
  };
}
