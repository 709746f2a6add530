import type { z } from 'zod';
import type { Clock } from '../clock';
import type { AppConfig, SinkSpec } from '../config';
import type { CheckOutcome } from '../check';
import type { Change, StreamCounts } from '../changes';
import type { EraseOutcome } from './erase';

/** One page's changes. (runId, stream, page) identifies it: writing it again replaces it, never adds to it. */
export interface ChangeBatch {
  tenant: string;
  runId: string;
  stream: string;
  page: number;
  changes: Change[];
  /**
   * The stream's key paths (several: a composite key, each change's `id` the JSON array of their values). A sink may
   * keep the parts apart (the postgres sink's key columns); every sink has the key in `id`.
   */
  keyPaths?: string[];
}

export interface RunManifest {
  tenant: string;
  runId: string;
  startedAt: string;
  finishedAt: string;
  ok: boolean;
  streams: Record<string, { ok: boolean; counts: StreamCounts; error?: string }>;
  /** Why a run whose streams all completed is still not done (its manifest could not be delivered). */
  error?: string;
}

/** What a sink did not store: records it set aside (SYNC_REJECTED_RECORDS=quarantine, shared/changes/rejected.ts). */
export interface WriteOutcome {
  rejected: number;
  /** A grouping sink kept the page to store with later ones (`hold`): not stored yet, so not to be checkpointed yet. */
  held?: boolean;
  /** Pages held earlier are now stored, through this one; `rejected`: what storing them set aside. */
  stored?: { throughPage: number; rejected: number };
}

/**
 * Where changes go: every sink. Every call is idempotent, because a run resumed from its checkpoint repeats the page
 * that was in flight. A write that throws fails the page; the checkpoint is not advanced past it. A write that
 * answers has stored the page (what it set aside counted).
 */
export interface ChangeSink {
  readonly description: string;
  write(batch: ChangeBatch, options?: { abortSignal?: AbortSignal }): Promise<WriteOutcome | void>;
  /** The stream's pass is complete: `changedPages` are the pages that had changes, in order. */
  endStream(
    tenant: string,
    runId: string,
    stream: string,
    changedPages: number[],
    counts: StreamCounts,
    /** `fields`: the record keys the stream selects — a file with columns (Parquet) has those and no others. */
    options?: { fields?: readonly string[] },
  ): Promise<WriteOutcome | void>;
  finish(manifest: RunManifest): Promise<void>;
  /**
   * Removes the record of `key` from what the sink keeps of `stream` — its current row and every change of it, in
   * every run's output — and says where (./erase.ts). Idempotent: erasing again finds nothing.
   */
  erase(
    tenant: string,
    stream: string,
    key: string,
    options?: { abortSignal?: AbortSignal },
  ): Promise<EraseOutcome>;
  /** Lets go of what the sink holds open (the postgres sink's connections), so a command can exit at once. */
  close(): Promise<void>;
  /**
   * The places this sink makes of a stream's name (a table, a folder, a file), each said whole — where, and its name:
   * two streams with a place equal once case is folded would share it, and both are refused before anything is
   * written (names.ts). None for a sink that names nothing after a stream (webhook).
   */
  names(stream: string): readonly string[];
  /** Places the sink keeps for itself (the postgres sink's checkpoint tables): no stream may be written there. */
  readonly ownNames: readonly string[];
}

/**
 * A sink that stores pages in groups (postgres): written with `hold`, it may keep the page for later and answer
 * `held`, report pages `stored` as it goes, store what it holds on `flush` and forget it on `drop`. The sync
 * checkpoints a page only once it is stored. Known by `groups` (`isGrouping`), not by optional methods: a wrapper
 * that passes a sink on passes on what it is.
 */
export interface GroupingSink extends ChangeSink {
  readonly groups: true;
  write(
    batch: ChangeBatch,
    options?: { abortSignal?: AbortSignal; hold?: boolean },
  ): Promise<WriteOutcome | void>;
  /** Stores the pages it holds for this run's stream; what it set aside only now (found while storing) is counted. */
  flush(runId: string, stream: string): Promise<WriteOutcome | void>;
  /** Forgets the pages it holds for the stream: its pass starts (again), and they will come again if they are due. */
  drop(runId: string, stream: string): void;
}

export const isGrouping = (sink: ChangeSink): sink is GroupingSink =>
  (sink as Partial<GroupingSink>).groups === true;

export type { SinkSpec } from '../config';

/** What a sink's start-up check may look at: its own settings, and what the app has around it. */
export interface SinkSettings {
  /** This sink's own settings, as its `settings.read` made them; undefined when they are not set. */
  own?: unknown;
  storage: boolean;
  /** Running in Azure (and not in Development): the app's folder is the read-only package mount. */
  hosted: boolean;
}

/**
 * The settings a sink reads, declared with it: shared/settings.ts composes them with the core ones (validated once,
 * at start-up, every bad one named) and docs/configuration.md is generated from their `.meta`.
 */
export interface SinkSettingsDeclaration {
  /** Each setting's schema, with its `.meta` (shared/config's `SettingMeta`). */
  shape: Record<string, z.ZodType>;
  /** Checks across them (one needs another): `issue` names the setting and what is wrong. */
  refine?(s: Record<string, unknown>, issue: (setting: string, message: string) => void): void;
  /** This sink's part of the configuration (`config.sinks[kind]`); undefined when it is not configured. */
  read(s: Record<string, unknown>): unknown;
}

/**
 * Ready-made clients a sink may be handed instead of making its own (a test's), by name. Each sink module names
 * the ones it takes (`declare module './types'`), so this contract carries no SDK's types.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- filled by the sink modules
export interface SinkClients {}

/** What a sink is made from: configuration, the secret store, and (tests) ready-made clients. */
export interface SinkContext {
  config: AppConfig;
  secrets: { get(name: string, options?: { abortSignal?: AbortSignal }): Promise<string> };
  clock?: Clock;
  /** What relative `dir:` paths are resolved against (default: the process's working folder). */
  cwd?: string;
  clients?: Partial<SinkClients>;
}

/**
 * A sink family: everything the app knows about one kind of SYNC_SINKS entry, in one object (shared/sinks/index.ts
 * lists them). Importing one must stay cheap — the configuration loads them all at start-up — so SDKs and drivers
 * load inside `create` and `doctor`.
 */
export interface SinkModule {
  kind: string;
  /** How the entry is written, for messages: `blob`, `dir:PATH`. */
  usage: string;
  /** The text after `kind:`, parsed (undefined when there is none). */
  argument: z.ZodType<string | undefined, string | undefined>;
  /** Its own settings, when it has any (a sink with settings is its module and one line in the registry). */
  settings?: SinkSettingsDeclaration;
  /** What is missing for this sink to work here, naming the setting; undefined when nothing is. */
  requires(spec: SinkSpec, settings: SinkSettings): string | undefined;
  create(spec: SinkSpec, context: SinkContext): ChangeSink;
  /** The set-up check `doctor` runs for this sink, with the app's own identity and settings. */
  doctor(spec: SinkSpec, context: SinkContext, signal: AbortSignal): Promise<CheckOutcome>;
}
