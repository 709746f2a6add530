import { resolve } from 'node:path';
import { z } from 'zod';
import { optional, type SettingsPart } from '../config';

/** The most streams discovery proposes unless told otherwise (SYNC_MAX_STREAMS): root collections first. */
export const DEFAULT_MAX_STREAMS = 200;

/** Which of the tenant's streams are read (the sync's and the exports'), where their definitions are, schema drift. */
export interface CatalogSettings {
  /** SYNC_STREAMS: the streams to read; undefined: every stream. */
  streams?: string[];
  /** SYNC_STREAMS_FILE, resolved against the app's folder: definitions that add to or override the built-in ones. */
  streamsFile?: string;
  /** SYNC_SCHEMA_CHANGES. */
  schemaChanges: 'report' | 'propagate';
  /** SYNC_MAX_STREAMS: the most streams discovery proposes (root collections first, then child streams). */
  maxStreams: number;
}

export const CATALOG_SETTINGS: SettingsPart<CatalogSettings> = {
  name: 'catalog',
  group: { id: 'streams', title: 'Streams (what the sync and exports read)' },
  shape: {
    SYNC_STREAMS: optional(
      z.string().regex(/^[\w-]+(,[\w-]+)*$/, 'a comma-separated list of stream names'),
    ).meta({
      description: 'Which streams to sync, comma-separated.',
      default: 'every stream',
      usedBy: 'sync',
      group: 'streams',
    }),
    SYNC_STREAMS_FILE: optional(z.string().min(1)).meta({
      description: 'JSON file of stream definitions that add to or override the built-in ones.',
      default: 'unset: the built-in streams',
      usedBy: 'sync',
      group: 'streams',
    }),
    SYNC_SCHEMA_CHANGES: optional(z.enum(['report', 'propagate'])).meta({
      description:
        'What a run does when the tenant’s schema moved under the catalog: `report` names added fields (not synced) and fails a stream whose fields are gone; `propagate` adopts added fields and drops removed ones in the stored catalog, each change in the run history.',
      default: '`report`',
      usedBy: 'sync',
      group: 'streams',
    }),
    SYNC_MAX_STREAMS: optional(
      z.coerce.number().int('a whole number').min(1, 'at least 1').max(5000, 'at most 5000'),
    ).meta({
      description:
        'The most streams discovery proposes: root collections first, then child streams (each read once per parent record). The rest are named in `discover`, never probed or read.',
      default: '`200`',
      usedBy: 'discover, sync',
      group: 'streams',
    }),
  },
  read: (s, { cwd }) => ({
    streams: (s.SYNC_STREAMS as string | undefined)?.split(','),
    streamsFile: s.SYNC_STREAMS_FILE ? resolve(cwd, s.SYNC_STREAMS_FILE as string) : undefined,
    schemaChanges: (s.SYNC_SCHEMA_CHANGES as CatalogSettings['schemaChanges'] | undefined) ?? 'report',
    maxStreams: (s.SYNC_MAX_STREAMS as number | undefined) ?? DEFAULT_MAX_STREAMS,
  }),
};
