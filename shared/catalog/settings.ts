import { resolve } from 'node:path';
import { z } from 'zod';
import { optional, type SettingsPart } from '../config';
import { DEFAULT_HASH_SECRET_NAME } from '../secrets/hash-key';
import { DEFAULT_PERSONAL_DATA, type PersonalDefault } from '../personal/policy';

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
  /** SYNC_PERSONAL_DATA and SYNC_HASH_SECRET_NAME: what leaves the app of a field marked personal (shared/personal/). */
  personal: { chosen: PersonalDefault; hashSecretName: string };
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
    SYNC_PERSONAL_DATA: optional(z.enum(['hash', 'drop', 'keep'])).meta({
      description:
        'What leaves the app of a field holding personal data (found by `discover`, marked `"default"` in the streams) when the streams file does not say: `hash` — a keyed HMAC, equal for equal values everywhere, so joins still work; `drop` — never written; `keep` — as the tenant sent it (docs/personal-data.md).',
      default: '`hash`',
      usedBy: 'discover, sync, exports',
      group: 'streams',
    }),
    SYNC_HASH_SECRET_NAME: optional(z.string().regex(/^[0-9a-zA-Z-]{1,127}$/, 'a secret name')).meta({
      description:
        'The secret holding the key personal data is hashed with, in the vault the app writes (KEY_VAULT_SESSIONS_URL, else KEY_VAULT_URL; locally the secrets file); made (32 random bytes) on first use when it does not exist. Changing or losing it changes every hashed value.',
      default: '`sync-hash-key`',
      usedBy: 'sync, exports',
      group: 'streams',
    }),
  },
  read: (s, { cwd }) => ({
    streams: (s.SYNC_STREAMS as string | undefined)?.split(','),
    streamsFile: s.SYNC_STREAMS_FILE ? resolve(cwd, s.SYNC_STREAMS_FILE as string) : undefined,
    schemaChanges: (s.SYNC_SCHEMA_CHANGES as CatalogSettings['schemaChanges'] | undefined) ?? 'report',
    maxStreams: (s.SYNC_MAX_STREAMS as number | undefined) ?? DEFAULT_MAX_STREAMS,
    personal: {
      chosen: (s.SYNC_PERSONAL_DATA as PersonalDefault | undefined) ?? DEFAULT_PERSONAL_DATA,
      hashSecretName: (s.SYNC_HASH_SECRET_NAME as string | undefined) ?? DEFAULT_HASH_SECRET_NAME,
    },
  }),
};
