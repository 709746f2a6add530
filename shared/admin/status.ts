import type { Host } from '../feature';
import type { RunSummary } from '../runs/summary';
import { healthReport } from './health';
import type { StatusPart, StatusView } from './status-page';

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
  // What each kind of run says of its runs at a glance (the sync: the credential, its last run and its next).
  const kindParts = Object.values(app.runKinds).flatMap(
    (k) =>
      k.details?.glance?.(
        runs.filter((r) => r.kind === k.kind),
        { config: app.config, now },
      ) ?? [],
  );
  return {
    tenant: health.tenant ?? '',
    generatedAt: new Date(now).toISOString(),
    adminHref,
    runs,
    kinds: app.runKinds,
    parts: [
      sessionPart,
      ...kindParts,
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
