import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalFileSecretStore } from '../../shared/secrets';
import { cliRuns } from './cli-tenant';
import { sandboxFixture, type SandboxFixture, type StartOptions } from './sandbox';

/**
 * What a test file that drives the CLI against one sandbox needs: the sandbox (started once, reset before each
 * test), and per test a fresh folder holding the demo credential's secret, with the settings that point the CLI at
 * both (`env`). Registers its own hooks: call it at the top of the file.
 */
/** A stream as `sync --json` sums it up. */
export interface StreamSummary {
  read: number;
  created: number;
  updated: number;
  deleted: number;
  unchanged: number;
  pass?: string;
  pageSize?: { size: number; limit: string };
  error?: string;
}

export interface SyncSummary {
  runId: string;
  ok: boolean;
  streams: Record<string, StreamSummary>;
  schema?: {
    added: Record<string, string[]>;
    changes: Array<{ stream: string; added: string[]; removed: string[] }>;
  };
}

export function cliSandbox(options: StartOptions, prefix = 'ti-cli-') {
  const t = {
    sb: undefined as unknown as SandboxFixture,
    dir: '',
    env: (extra: Record<string, string> = {}) => ({
      ...t.sb.settings,
      LOCAL_SECRETS_FILE: join(t.dir, 'secrets.json'),
      ...extra,
    }),
    ...cliRuns<SyncSummary>(
      (): string => t.dir,
      (extra): Record<string, string> => t.env(extra),
    ),
  };
  beforeAll(async () => {
    t.sb = await sandboxFixture(options);
  });
  afterAll(() => t.sb.close());
  beforeEach(async () => {
    await t.sb.hook('reset');
    t.dir = await mkdtemp(join(tmpdir(), prefix));
    await new LocalFileSecretStore(join(t.dir, 'secrets.json')).set(
      'tenant-client-secret',
      t.sb.clientSecret,
    );
  });
  afterEach(() => rm(t.dir, { recursive: true, force: true }));
  return t;
}
