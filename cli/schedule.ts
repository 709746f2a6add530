import { nextOccurrences, parseNcrontab } from '../shared/ncrontab';
import { parse, UsageError } from './args';

/**
 * `tenant-integrations schedule "<ncrontab>" [--from ISO] [--count N]`: the next runs of a schedule in UTC ISO 8601,
 * one a line — the answer the local timers, the status page, doctor and the provision hook use (shared/ncrontab.ts,
 * NCrontab's meaning, as Azure's timer fires).
 */
export async function scheduleCommand(args: string[]): Promise<number> {
  const { values, positionals } = parse(args, { from: { type: 'string' }, count: { type: 'string' } }, true);
  if (positionals.length !== 1)
    throw new UsageError('give one schedule in quotes, e.g. "0 */15 * * * *" (six fields, seconds first)');
  const count = values.count === undefined ? 5 : Number(values.count);
  if (!Number.isInteger(count) || count < 1 || count > 1000)
    throw new UsageError('--count must be a whole number from 1 to 1000');
  const from = values.from === undefined ? Date.now() : Date.parse(values.from);
  if (!Number.isFinite(from))
    throw new UsageError(`--from: "${values.from}" is not an ISO 8601 date and time`);
  let runs: number[];
  try {
    runs = nextOccurrences(parseNcrontab(positionals[0]), from, count);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  process.stdout.write(`${runs.map((t) => new Date(t).toISOString()).join('\n')}\n`);
  return 0;
}
