// Runs a sink of the registry (the built app, dist/) in its own Node process — the Parquet writer some sinks load is
// an ES module jest cannot load — through the steps the sink contract suite gives it (test/integration/
// sink-contract.test.ts). Reads one JSON command on stdin: { env, cwd, sinks (a SYNC_SINKS entry), steps: [{ runId,
// stream, pages: [[change…]…], twice?, end?, endTwice?, finish?, erase?: KEY } …] }. Each step is a sink made anew (a process
// started again); a step without `end` stops before its stream's end (a crash). Prints {ok, outcomes} or {ok:false,
// error, code}.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { loadConfig } = require('../../dist/shared/app');
const { sinksFor } = require('../../dist/shared/sinks');
const { createSecretStore } = require('../../dist/shared/secrets');
const { change } = require('../../dist/shared/changes');

let input = '';
for await (const chunk of process.stdin) input += chunk;
const command = JSON.parse(input);
const config = loadConfig(command.env, { cwd: command.cwd });
const secrets = createSecretStore(config);

const outcomes = [];
try {
  for (const step of command.steps) {
    const sink = sinksFor(command.sinks, { config, secrets, cwd: command.cwd });
    if (step.erase) {
      // An erasure: the key's record out of what the sink keeps of the stream (its outcome, as the step's).
      try {
        outcomes.push({ erased: await sink.erase('acme', step.stream, step.erase) });
      } finally {
        await sink.close();
      }
      continue;
    }
    const pages = step.pages.map((p) =>
      p.map((x) => change(step.stream, x.kind, x.id, x.changeId, x.record)),
    );
    const outcome = { written: [], ended: [] };
    try {
      for (const [i, changes] of pages.entries()) {
        const batch = {
          tenant: 'acme',
          runId: step.runId,
          stream: step.stream,
          page: i + 1,
          changes,
          keyPaths: ['id'],
        };
        outcome.written.push((await sink.write(batch)) ?? null);
        if (step.twice) await sink.write(batch);
      }
      const counts = { read: 0, created: 0, updated: 0, deleted: 0, unchanged: 0 };
      for (const c of pages.flat()) counts[c.kind]++;
      if (step.end || step.endTwice)
        for (let n = 0; n < (step.endTwice ? 2 : 1); n++)
          outcome.ended.push(
            (await sink.endStream(
              'acme',
              step.runId,
              step.stream,
              pages.map((_, i) => i + 1),
              counts,
              {
                fields: step.fields,
              },
            )) ?? null,
          );
      if (step.finish) {
        const now = new Date().toISOString();
        await sink.finish({
          tenant: 'acme',
          runId: step.runId,
          startedAt: now,
          finishedAt: now,
          ok: true,
          streams: {},
        });
      }
    } finally {
      await sink.close();
    }
    outcomes.push(outcome);
  }
  process.stdout.write(JSON.stringify({ ok: true, outcomes }));
} catch (err) {
  process.stdout.write(
    JSON.stringify({ ok: false, error: String(err?.message ?? err), code: err?.code, outcomes }),
  );
}
