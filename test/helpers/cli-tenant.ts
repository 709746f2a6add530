import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Change } from '../../shared/changes';
import { LocalFileSecretStore } from '../../shared/secrets';
import { runCli } from './cli';
import type { StreamSummary } from './cli-sandbox';

/** `sync --json`'s summary, with what a stream of a server not designed here may add. */
export interface TenantSyncSummary {
  runId: string;
  ok: boolean;
  streams: Record<string, StreamSummary & { duplicates?: number; errorCode?: string; orderNotKept?: true }>;
}

/** `sync --json` into `dir()`'s `out` (the dir sink), and the changes a run delivered there. */
export function cliRuns<Summary>(
  dir: () => string,
  env: (extra?: Record<string, string>) => Record<string, string>,
) {
  return {
    sync: async (args: string[] = [], extra: Record<string, string> = {}) => {
      const r = await runCli(['sync', '--sink', `dir:${join(dir(), 'out')}`, '--json', ...args], {
        env: env(extra),
      });
      if (!r.stdout.trim()) throw new Error(`sync printed no summary (exit ${r.code}): ${r.stderr}`);
      return { code: r.code, stderr: r.stderr, summary: JSON.parse(r.stdout) as Summary };
    },
    delivered: async (runId: string, stream: string): Promise<Change[]> =>
      (await readFile(join(dir(), 'out', runId, `${stream}.ndjson`), 'utf8').catch(() => ''))
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Change),
  };
}

/**
 * What a test file that drives the CLI against a tenant of its own (a real server, signed in through the sandbox's
 * identity provider) needs: `settings` and `clientSecret` set once the tenant runs, and per test a fresh folder
 * holding the secret, with `sync --json` into its `out` and what a run delivered there. Registers its own hooks: call
 * it at the top of the file.
 */
export function cliTenant(prefix: string) {
  const t = {
    dir: '',
    settings: {} as Record<string, string>,
    clientSecret: '',
    env: (extra: Record<string, string> = {}): Record<string, string> => ({
      ...t.settings,
      LOCAL_SECRETS_FILE: join(t.dir, 'secrets.json'),
      ...extra,
    }),
    ...cliRuns<TenantSyncSummary>(
      (): string => t.dir,
      (extra): Record<string, string> => t.env(extra),
    ),
  };
  beforeEach(async () => {
    t.dir = await mkdtemp(join(tmpdir(), prefix));
    await new LocalFileSecretStore(join(t.dir, 'secrets.json')).set('tenant-client-secret', t.clientSecret);
  });
  afterEach(() => rm(t.dir, { recursive: true, force: true }));
  return t;
}
