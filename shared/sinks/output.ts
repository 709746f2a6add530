import { z } from 'zod';
import { optional, type SettingsPart } from '../config';

/** What the sinks that write files read: the format, and what to do with a record they cannot store. */
export interface SinkOutput {
  /** SYNC_FORMAT: how the blob and dir sinks write change files — NDJSON, or Parquet too. */
  format: 'ndjson' | 'parquet';
  /** SYNC_REJECTED_RECORDS: what a sink does with a record it cannot store. */
  rejectedRecords: 'fail' | 'quarantine';
}
export type SyncFormat = SinkOutput['format'];

export const SINK_OUTPUT: SettingsPart<SinkOutput> = {
  name: 'sinkOutput',
  group: { id: 'sinks', title: 'Sinks (where the sync’s changes go)' },
  shape: {
    SYNC_FORMAT: optional(z.enum(['ndjson', 'parquet'])).meta({
      description:
        '`parquet`: the `dir` sink writes `{stream}.parquet` instead of NDJSON, the `blob` sink adds it beside the NDJSON.',
      default: '`ndjson`',
      usedBy: 'sync (blob, dir sinks)',
      group: 'sinks',
    }),
    SYNC_REJECTED_RECORDS: optional(z.enum(['fail', 'quarantine'])).meta({
      description:
        'A record a sink cannot store (PostgreSQL: a NUL or a lone surrogate; Parquet: a lone surrogate): `fail` stops its page naming the record; `quarantine` sets it aside with its reason (PostgreSQL: the `_quarantine` table; Parquet: `{stream}.quarantine.ndjson` beside the change files), counts it, and goes on.',
      default: '`fail`',
      usedBy: 'sync (postgres sink, Parquet)',
      group: 'sinks',
    }),
  },
  read: (s) => ({
    format: (s.SYNC_FORMAT as SinkOutput['format'] | undefined) ?? 'ndjson',
    rejectedRecords: (s.SYNC_REJECTED_RECORDS as SinkOutput['rejectedRecords'] | undefined) ?? 'fail',
  }),
};
