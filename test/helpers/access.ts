import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAccessLayer, type AccessDeps } from '../../shared/access';
import { OffsetClock } from '../../shared/clock';
import { loadConfig } from '../../shared/app';
import { createLogger, type Level } from '../../shared/log';
import { LocalFileSecretStore } from '../../shared/secrets';
import { FileSessionMetadataStore } from '../../shared/state/session-metadata';
import type { SandboxFixture } from './sandbox';

/**
 * The real access layer pointed at a running sandbox, with a development secret file in a temp folder and
 * a clock that moves together with the sandbox's. Retries are fast so fault tests stay short.
 */
export async function accessFixture(sb: SandboxFixture, deps: AccessDeps & { clock?: OffsetClock } = {}) {
  const dir = await mkdtemp(join(tmpdir(), 'ti-access-'));
  const config = loadConfig({
    ...sb.settings,
    LOCAL_SECRETS_FILE: join(dir, 'secrets.json'),
  });
  const file = new LocalFileSecretStore(config.localSecretsFile);
  await file.set(config.clientSecretName, sb.clientSecret);
  // Our clock: real time plus what the test moves it by, unless the test gives one (e.g. a frozen one).
  const clock = deps.clock ?? new OffsetClock();
  const logs: Array<{ level: Level; message: string } & Record<string, unknown>> = [];
  const access = createAccessLayer(config, {
    clock,
    logger: createLogger((l) => logs.push(l)),
    sessionMetadata: new FileSessionMetadataStore(join(dir, 'sessions.json')),
    tokenOptions: {
      retry: { maxAttempts: 4, baseDelayMs: 5, maxDelayMs: 50 },
      rejectionBackoffMs: { base: 5_000, max: 60_000 },
    },
    graphqlOptions: { retry: { maxAttempts: 4, baseDelayMs: 5, maxDelayMs: 50 }, timeoutMs: 2_000 },
    ...deps,
  });
  return {
    ...access,
    config,
    clock,
    logs,
    file,
    /** Moves the sandbox's clock and ours together. */
    advance: async (seconds: number) => {
      await sb.advance(seconds);
      clock.advanceSeconds(seconds);
    },
    /** Puts a new client secret in the store, as an operator would after rotating. */
    storeSecret: (value: string) => file.set(config.clientSecretName, value),
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}
