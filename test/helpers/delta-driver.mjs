// Runs the delta sink (the built app, dist/) in its own Node process — Parquet's writer is an ES module jest cannot
// load. Reads one JSON command on stdin: { store: {folder} | {connectionString, container, prefix}, options, runId,
// tenant, stream, pages: [[change…]…] | generate: {kind, from, to, pageSize, extra}, fields, fault: {loseAfter?,
// failBefore?} (regex sources), clockOffsetSeconds, stageOnly (pages written, the stream never ended: a run killed),
// op: 'run' | 'race' | 'snapshot' (with table) | 'erase' (with key) }. Prints {ok: true, result, peakRssMb} or {ok: false, error, peakRssMb}.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { DeltaSink, FolderStore, BlobStore, readSnapshot } = require('../../dist/shared/sinks/delta');
const { OffsetClock } = require('../../dist/shared/clock');
const { lazyContainer } = require('../../dist/shared/state/lazy');
const { change } = require('../../dist/shared/changes');

let input = '';
for await (const chunk of process.stdin) input += chunk;
const command = JSON.parse(input);

function storeOf(spec, fault) {
  let store;
  if (spec.folder) store = new FolderStore(spec.folder);
  else {
    const { BlobServiceClient } = require('@azure/storage-blob');
    const service = BlobServiceClient.fromConnectionString(spec.connectionString);
    store = new BlobStore(lazyContainer(service, spec.container), {
      account: 'devstoreaccount1',
      container: spec.container,
      prefix: spec.prefix ?? '',
    });
  }
  if (!fault) return store;
  // Chosen operations act and then lose their answer (loseAfter), or fail before acting (failBefore), once.
  const rules = {
    after: fault.loseAfter && new RegExp(fault.loseAfter),
    before: fault.failBefore && new RegExp(fault.failBefore),
  };
  const check = (path, when) => {
    if (!rules[when]?.test(path)) return;
    rules[when] = undefined;
    throw new Error(when === 'before' ? 'refused' : 'connection reset after the write');
  };
  for (const method of ['createIfAbsent', 'put', 'putFile']) {
    const original = store[method].bind(store);
    store[method] = async (path, ...rest) => {
      check(path, 'before');
      const answer = await original(path, ...rest);
      check(path, 'after');
      return answer;
    };
  }
  return store;
}

/** Records `from`..`to` of the `items` stream as pages of changes (what test/helpers/delta.ts `changesOf` makes). */
function generated({ kind, from, to, pageSize = 500, extra = {} }) {
  const pages = [];
  for (let at = from; at < to; at += pageSize) {
    const page = [];
    for (let i = at; i < Math.min(to, at + pageSize); i++) {
      const id = `r${String(i).padStart(7, '0')}`;
      const record = {
        id,
        title: `Record ${i}`,
        score: i / 2,
        done: i % 2 === 0,
        tags: ['a', String(i)],
        ...extra,
      };
      page.push({
        kind,
        id,
        changeId: `${kind}-${id}-${JSON.stringify(extra)}`,
        record: kind === 'deleted' ? undefined : record,
      });
    }
    pages.push(page);
  }
  return pages;
}

function sinkOf(c) {
  const clock = new OffsetClock();
  clock.advanceSeconds(c.clockOffsetSeconds ?? 0);
  return new DeltaSink(storeOf(c.store, c.fault), {
    schemaChanges: 'propagate',
    rejected: 'fail',
    retentionHours: 168,
    checkpointInterval: 10,
    rowsPerFile: 10,
    deletionVectors: true,
    ...c.options,
    clock,
  });
}

async function run(c) {
  const sink = sinkOf(c);
  const pages = (c.generate ? generated(c.generate) : c.pages).map((p) =>
    p.map((x) => change(c.stream ?? 'items', x.kind, x.id, x.changeId, x.record)),
  );
  for (const [i, changes] of pages.entries()) {
    const batch = {
      tenant: c.tenant ?? 'acme',
      runId: c.runId,
      stream: c.stream ?? 'items',
      page: i + 1,
      changes,
    };
    await sink.write(batch);
    if (c.twice !== false) await sink.write(batch); // a page delivered twice replaces itself
  }
  if (c.stageOnly) return 'staged';
  const created = pages.flat().filter((x) => x.kind === 'created').length;
  return sink.endStream(
    c.tenant ?? 'acme',
    c.runId,
    c.stream ?? 'items',
    pages.map((_, i) => i + 1),
    { read: created, created, updated: 0, deleted: 0, unchanged: 0 },
    { fields: c.fields },
  );
}

try {
  const result =
    command.op === 'race'
      ? await Promise.all(command.runs.map(run))
      : command.op === 'snapshot'
        ? await readSnapshot(storeOf(command.store), command.table).then((s) => ({
            version: s.version,
            files: s.files.size,
            txns: Object.fromEntries(s.txns),
          }))
        : command.op === 'erase'
          ? await sinkOf(command).erase(command.tenant ?? 'acme', command.stream ?? 'items', command.key)
          : await run(command);
  const peakRssMb = Math.round(process.resourceUsage().maxRSS / 1024);
  process.stdout.write(JSON.stringify({ ok: true, result: result ?? null, peakRssMb }));
} catch (err) {
  const peakRssMb = Math.round(process.resourceUsage().maxRSS / 1024);
  process.stdout.write(
    JSON.stringify({ ok: false, error: String(err?.message ?? err), code: err?.code, peakRssMb }),
  );
}
