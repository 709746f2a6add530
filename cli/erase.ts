import { userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import { createAccessLayer } from '../shared/access';
import { systemClock } from '../shared/clock';
import { ERASE_RUN, runErasure } from '../shared/erasure/run';
import { ConfigError, IntegrationError } from '../shared/errors';
import { silentLogger } from '../shared/log';
import { recordedSummary } from '../shared/runs/kind';
import { runHistory } from '../shared/runs/parts';
import { sinksFor } from '../shared/sinks';
import type { ChangeSink } from '../shared/sinks/types';
import { parse, UsageError } from './args';
import { describeTarget, resolveTenant } from './context';

const STREAM = /^[\w-]{1,63}$/;

/**
 * `tenant-integrations erase --stream S --key K`: the record of key K removed from every sink named — its current
 * row and every change of it, in every run's output (docs/personal-data.md, "Erasure") — and the erasure recorded
 * (who, when, which stream and key, where; never a value) in the run history (Table storage with AzureWebJobsStorage,
 * `.local/run-history.json` without). Exit 0 when every sink named
 * could erase, 1 when one sent the record where the app cannot reach it (a webhook receiver: erase it there).
 */
export async function eraseCommand(args: string[]): Promise<number> {
  const { values } = parse(args, {
    stream: { type: 'string' },
    key: { type: 'string' },
    sink: { type: 'string' },
    by: { type: 'string' },
    json: { type: 'boolean' },
  });
  if (!values.stream || !STREAM.test(values.stream))
    throw new UsageError('--stream names the stream (letters, digits, dash or underscore)');
  if (values.key === undefined || !values.key.length || values.key.length > 4096)
    throw new UsageError(
      '--key is the record’s key as the changes carry it (`id`; a composite key is its JSON array), 1 to 4096 characters',
    );
  const target = await resolveTenant();
  let sink: ChangeSink | undefined;
  try {
    const { config } = target;
    const access = createAccessLayer(config);
    const local = dirname(config.localSecretsFile);
    try {
      const context = { config, secrets: access.secrets };
      sink = sinksFor(values.sink ?? `dir:${join(local, 'sync-out')}`, context, '--sink');
    } catch (err) {
      if (err instanceof ConfigError) throw new UsageError(err.problems.join('; '));
      throw err;
    }
    if (!values.json) describeTarget(target);
    const history = runHistory(config);
    const summary = await runErasure(
      sink,
      {
        tenant: config.tenant.name,
        stream: values.stream,
        key: values.key,
        by: values.by ?? userInfo().username,
        trigger: 'manual',
      },
      {
        clock: systemClock,
        logger: silentLogger,
        save: (s) => history.record(recordedSummary(ERASE_RUN, s)),
      },
    );
    if (summary.error) throw new IntegrationError(summary.error.code, summary.error.message);
    const outcome = summary.erase;
    if (values.json) process.stdout.write(`${JSON.stringify(summary)}\n`);
    else {
      const total = outcome.erased.reduce((n, e) => n + e.count, 0);
      for (const e of outcome.erased) process.stderr.write(`✔ ${e.place}: ${e.count} removed\n`);
      for (const u of outcome.unreachable ?? []) process.stderr.write(`✖ ${u}\n`);
      process.stderr.write(
        `${total ? `Erased ${values.stream} ${values.key}: ${total} rows and lines` : `Nothing of ${values.stream} ${values.key} was there`} in ${sink.description}; recorded in the run history as ${summary.id}.\n`,
      );
    }
    return outcome.unreachable?.length ? 1 : 0;
  } finally {
    await sink?.close();
    await target.close();
  }
}
