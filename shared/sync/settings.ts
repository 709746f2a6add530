import { z } from 'zod';
import { durationMs, durationSetting, optional, type SettingsPart } from '../config';
import { nextOccurrence, parseNcrontab } from '../ncrontab';

export const DEFAULT_SYNC_SCHEDULE = '0 */15 * * * *';

/** The sync's own settings: when it runs, and how often a stream read incrementally is read whole. */
export interface SyncSettings {
  /** SYNC_SCHEDULE (NCRONTAB; the timer reads the setting itself, `%SYNC_SCHEDULE%`). */
  schedule: string;
  /** SYNC_FULL_PASS_EVERY and SYNC_INCREMENTAL_OVERLAP_SECONDS, in milliseconds. */
  passes: { fullPassEveryMs: number; overlapMs: number };
}

export const SYNC_SETTINGS: SettingsPart<SyncSettings> = {
  name: 'sync',
  group: { id: 'sync', title: 'Sync' },
  shape: {
    SYNC_SCHEDULE: optional(
      z.string().superRefine((expression, ctx) => {
        // The timer trigger's own grammar, checked now: a schedule that never fires fails here, not silently.
        try {
          nextOccurrence(parseNcrontab(expression), Date.UTC(2026, 0, 1));
        } catch (err) {
          ctx.addIssue({
            code: 'custom',
            message: `not a schedule the timer can run: ${(err as Error).message}`,
          });
        }
      }),
    ).meta({
      description:
        'When the sync runs: NCRONTAB, six fields, seconds first, UTC — as Azure reads it, the day of the month and the day of the week must both match; `tenant-integrations schedule "<expr>"` prints the next runs.',
      default: '`0 */15 * * * *` (every 15 minutes)',
      usedBy: 'sync',
      group: 'sync',
    }),
    SYNC_FULL_PASS_EVERY: optional(durationSetting(60_000, '1m')).meta({
      description:
        'A stream that reads incrementally (its `incremental` in the streams) still reads everything this often — the only way the API shows a deletion. Also after its definition changed, or its state is missing.',
      default: '`24h`',
      usedBy: 'sync',
      group: 'sync',
    }),
    SYNC_INCREMENTAL_OVERLAP_SECONDS: optional(z.coerce.number().int().min(0).max(86_400)).meta({
      description:
        'An incremental pass asks for records changed since the last one’s greatest "changed at" less this, for clocks that differ and writes still in flight upstream (what it reads twice is unchanged, not delivered again).',
      default: '`300`',
      usedBy: 'sync',
      group: 'sync',
    }),
  },
  read: (s) => ({
    schedule: (s.SYNC_SCHEDULE as string | undefined) ?? DEFAULT_SYNC_SCHEDULE,
    passes: {
      fullPassEveryMs: durationMs((s.SYNC_FULL_PASS_EVERY as string | undefined) ?? '24h'),
      overlapMs: ((s.SYNC_INCREMENTAL_OVERLAP_SECONDS as number | undefined) ?? 300) * 1000,
    },
  }),
};
