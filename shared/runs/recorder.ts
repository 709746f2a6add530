import type { Clock } from '../clock';
import type { Logger } from '../log';
import type { RunHistory, RunSummary } from './history';

/** The one action that fixes a failed run, by error code: what the status page and doctor show. */
export const ACTIONS: Record<string, string> = {
  CREDENTIAL_REJECTED:
    'Store the credential’s current secret (`tenant-integrations secrets set`), or create a credential on the tenant’s API Credentials page.',
  SECRET_NOT_FOUND: 'Set the secret: `tenant-integrations secrets set <name>` (or `az keyvault secret set`).',
  SECRET_STORE_UNAVAILABLE:
    'Give the app’s identity Key Vault Secrets User on the vault, and check KEY_VAULT_URL; the next run retries.',
  CONFIG_INVALID: 'Fix the setting named in the message; every bad setting is listed.',
  LOGIN_REQUIRED: 'Sign in again on the admin page (/api/manage).',
  UPSTREAM_UNAVAILABLE: 'The tenant service did not answer; the next run resumes from its checkpoint.',
  UPSTREAM_TIMEOUT: 'The tenant service did not answer in time; the next run resumes from its checkpoint.',
  UPSTREAM_REJECTED: 'The tenant service refused the request; check the stream’s query (SYNC_STREAMS_FILE).',
  UPSTREAM_MALFORMED: 'The tenant service answered something unexpected; check the stream’s paths.',
  GRAPHQL_ERRORS: 'The stream’s query was refused by the schema; fix it in SYNC_STREAMS_FILE.',
  EXPORT_FAILED: 'Request the export again; the message names the stream that failed and why.',
  SINK_FAILED: 'The downstream receiver failed; fix it — the next run resumes from the same page.',
};

export const actionFor = (code: string | undefined): string | undefined => (code ? ACTIONS[code] : undefined);

/**
 * Writes run summaries without ever failing the run: a storage error is logged and the run goes on. Runs older
 * than the retention are purged by the app itself, at most once an hour per process.
 */
export class RunRecorder {
  private lastPurgeMs = Number.NEGATIVE_INFINITY;

  constructor(
    readonly history: RunHistory,
    private readonly options: { logger: Logger; clock: Clock; retentionDays: number },
  ) {}

  async save(summary: RunSummary): Promise<void> {
    try {
      await this.history.record(summary);
    } catch (err) {
      this.options.logger.log('warn', 'run history not written', {
        runId: summary.id,
        reason: (err as Error).message.split('\n')[0],
      });
      return;
    }
    const now = this.options.clock.now();
    if (now - this.lastPurgeMs < 3_600_000) return;
    this.lastPurgeMs = now;
    try {
      const cutoff = new Date(now - this.options.retentionDays * 86_400_000).toISOString();
      const count = await this.history.purge(cutoff);
      if (count) this.options.logger.log('info', 'run history purged', { count });
    } catch (err) {
      this.options.logger.log('warn', 'run history not purged', {
        reason: (err as Error).message.split('\n')[0],
      });
    }
  }
}
