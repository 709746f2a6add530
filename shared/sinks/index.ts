import { z } from 'zod';
import { optional, type AppConfig } from '../config';
import { ConfigError } from '../errors';
import { inSpan } from '../telemetry';
import { blobSink } from './blob';
import { deltaSink } from './delta';
import { dirSink } from './dir';
import { MultiSink } from './fan-out';
import { postgresSink } from './postgres';
import {
  isGrouping,
  type ChangeSink,
  type GroupingSink,
  type SinkContext,
  type SinkModule,
  type SinkSpec,
} from './types';
import { webhookSink } from './webhook';

export { isGrouping } from './types';
export { nameCollisions, refusedByName, type NameCollision } from './names';
export type {
  ChangeBatch,
  ChangeSink,
  GroupingSink,
  RunManifest,
  SinkContext,
  SinkModule,
  SinkSpec,
  WriteOutcome,
} from './types';

/**
 * Every sink the app can write to. Adding one is a module beside these (kind, entry, its settings, requirements,
 * create, doctor) and one line here: the settings' loader, the sync's set-up, `--sink`, `doctor` and the
 * configuration reference all read this list.
 */
export const SINKS: readonly SinkModule[] = [blobSink, webhookSink, postgresSink, deltaSink, dirSink];

/** "blob, webhook, postgres, delta[:PATH] or dir:PATH": what SYNC_SINKS accepts, for messages and the reference. */
export const SINK_USAGE = `${SINKS.slice(0, -1)
  .map((s) => s.usage)
  .join(', ')} or ${SINKS.at(-1)?.usage}`;

export const sinkModule = (kind: string): SinkModule | undefined => SINKS.find((s) => s.kind === kind);

/** What is around a sink when its requirements are checked: every sink's own settings, storage, hosting. */
export interface SinksAround {
  sinks: Readonly<Record<string, unknown>>;
  storage: boolean;
  hosted: boolean;
}

/** SYNC_SINKS, and every sink's own settings: what shared/settings.ts composes with the core settings. */
export const SINK_SETTINGS: Record<string, z.ZodType> = {
  SYNC_SINKS: optional(z.string().min(1)).meta({
    description: `Where changes go: ${SINK_USAGE}, comma-separated; each is checked at start-up for the settings it needs.`,
    default: '`blob`',
    usedBy: 'sync',
    group: 'sinks',
  }),
  ...Object.assign({}, ...SINKS.map((m) => m.settings?.shape ?? {})),
};

/**
 * Each sink's part of the configuration, and SYNC_SINKS parsed and checked against them: from settings the composed
 * schema parsed. Problems name the setting (`SYNC_SINKS`, or the sink's own) and what is wrong.
 */
export function readSinks(
  s: Record<string, unknown>,
  around: Omit<SinksAround, 'sinks'>,
): {
  sinkSpecs: SinkSpec[];
  sinks: Record<string, unknown>;
  problems: Array<[setting: string, message: string]>;
} {
  const problems: Array<[string, string]> = [];
  const sinks: Record<string, unknown> = {};
  for (const m of SINKS) {
    m.settings?.refine?.(s, (setting, message) => problems.push([setting, message]));
    const own = m.settings?.read(s);
    if (own !== undefined) sinks[m.kind] = own;
  }
  const text = s.SYNC_SINKS as string | undefined;
  if (!text) return { sinkSpecs: [{ kind: 'blob' }], sinks, problems };
  const parsed = parseSinks(text, { ...around, sinks });
  for (const p of parsed.problems) problems.push(['SYNC_SINKS', p]);
  return { sinkSpecs: parsed.specs, sinks, problems };
}

/** One entry's problem, or its spec: `kind` or `kind:argument`, the argument checked by the sink's own schema. */
function parseEntry(entry: string): { spec: SinkSpec } | { problem: string } {
  const colon = entry.indexOf(':');
  const kind = colon < 0 ? entry : entry.slice(0, colon);
  const module = sinkModule(kind);
  if (!module) return { problem: `unknown sink "${entry}"; use ${SINK_USAGE}, comma-separated` };
  const parsed = module.argument.safeParse(colon < 0 ? undefined : entry.slice(colon + 1));
  if (!parsed.success) return { problem: `${kind}: ${parsed.error.issues[0]?.message ?? 'not valid'}` };
  return { spec: parsed.data === undefined ? { kind } : { kind, argument: parsed.data } };
}

/**
 * SYNC_SINKS (or `--sink`): comma-separated entries, each checked by its sink's schema and, when `around` is given,
 * for the settings it needs. Problems come in the order of the entries, without the setting's name.
 */
export function parseSinks(text: string, around?: SinksAround): { specs: SinkSpec[]; problems: string[] } {
  const specs: SinkSpec[] = [];
  const problems: string[] = [];
  for (const entry of text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const parsed = parseEntry(entry);
    if ('problem' in parsed) {
      problems.push(parsed.problem);
      continue;
    }
    const missing =
      around &&
      sinkModule(parsed.spec.kind)?.requires(parsed.spec, {
        own: around.sinks[parsed.spec.kind],
        storage: around.storage,
        hosted: around.hosted,
      });
    if (missing) problems.push(missing);
    else specs.push(parsed.spec);
  }
  if (!specs.length && !problems.length) problems.push(`no sink given; use ${SINK_USAGE}`);
  return { specs, problems };
}

/** What the sinks' requirements look at, from loaded configuration. */
export function sinksAround(config: AppConfig): SinksAround {
  return {
    sinks: config.sinks,
    storage: Boolean(config.storageConnection || config.storageServiceUris?.blob),
    hosted: config.hosted,
  };
}

/** The sinks of parsed specs, several as one. */
export function createSink(specs: SinkSpec[], context: SinkContext): ChangeSink {
  const sinks = specs.map((spec) => (sinkModule(spec.kind) as SinkModule).create(spec, context));
  return sinks.length === 1 ? sinks[0] : new MultiSink(sinks);
}

/**
 * A sink whose every call is a span of the run's trace (shared/telemetry): `sink write`, `sink flush`,
 * `sink end stream`, `sink finish`, naming the sink, stream and page. What the sink is passes on with it: a grouping
 * sink stays one (`isGrouping`), so a pass checkpoints a page only once the sink has stored it.
 */
export function tracedSink(sink: ChangeSink): ChangeSink {
  const fields = { sink: sink.description };
  // `hold` is passed on as it came: only a grouping sink is ever given it (below).
  const write: GroupingSink['write'] = (batch, options) =>
    inSpan(
      'sink write',
      { ...fields, runId: batch.runId, stream: batch.stream, page: batch.page, count: batch.changes.length },
      () => sink.write(batch, options),
    );
  const traced: ChangeSink = {
    description: sink.description,
    close: () => sink.close(),
    names: (stream) => sink.names(stream),
    ownNames: sink.ownNames,
    write,
    endStream: (tenant, runId, stream, changedPages, counts, options) =>
      inSpan('sink end stream', { ...fields, runId, stream, pages: changedPages.length }, () =>
        sink.endStream(tenant, runId, stream, changedPages, counts, options),
      ),
    finish: (manifest) =>
      inSpan(
        'sink finish',
        { ...fields, runId: manifest.runId, outcome: manifest.ok ? 'succeeded' : 'failed' },
        () => sink.finish(manifest),
      ),
    // The key is not a span's field: it may be a person's (an e-mail address keying a stream).
    erase: (tenant, stream, key, options) =>
      inSpan('sink erase', { ...fields, stream }, () => sink.erase(tenant, stream, key, options)),
  };
  if (!isGrouping(sink)) return traced;
  const grouping: GroupingSink = {
    ...traced,
    groups: true,
    write,
    flush: (runId, stream) =>
      inSpan('sink flush', { ...fields, runId, stream }, () => sink.flush(runId, stream)),
    drop: (runId, stream) => sink.drop(runId, stream),
  };
  return grouping;
}

/** Parses, checks and builds in one step; every problem names `source`, the setting or flag it came from. */
export function sinksFor(text: string, context: SinkContext, source = 'SYNC_SINKS'): ChangeSink {
  const { specs, problems } = parseSinks(text, sinksAround(context.config));
  if (problems.length) throw new ConfigError(problems.map((p) => `${source}: ${p}`));
  return createSink(specs, context);
}

export { BlobSink, SYNC_CONTAINER } from './blob';
export { DeltaSink } from './delta';
export { DirectorySink } from './dir';
export { MultiSink } from './fan-out';
export { BATCH_ROWS, PostgresSink } from './postgres';
export { WebhookSink } from './webhook';
