import { appendFileSync, mkdirSync, readFileSync, existsSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/**
 * The fault-and-load suite's findings: each test appends a row, and the global teardown turns them into
 * docs/reliability.md (a table an operator reads) and prints it.
 */
const ROOT = resolve(__dirname, '../..');
const ROWS = join(ROOT, 'test-results', 'faults.ndjson');
const DOC = join(ROOT, 'docs', 'reliability.md');

export interface FaultRow {
  kind: 'fault';
  area: string;
  fault: string;
  expected: string;
  observed: string;
  ok: boolean;
}

export interface LoadRow {
  kind: 'load';
  what: string;
  figure: string;
  ok: boolean;
}

export function record(row: FaultRow | LoadRow): void {
  mkdirSync(dirname(ROWS), { recursive: true });
  appendFileSync(ROWS, `${JSON.stringify(row)}\n`);
}

export function clearRows(): void {
  rmSync(ROWS, { force: true });
}

const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

export function writeReport(): string {
  const rows = existsSync(ROWS)
    ? readFileSync(ROWS, 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as FaultRow | LoadRow)
    : [];
  const faults = rows.filter((r): r is FaultRow => r.kind === 'fault');
  const loads = rows.filter((r): r is LoadRow => r.kind === 'load');
  const asExpected = faults.filter((r) => r.ok).length;
  const text = [
    '# Reliability: faults and load',
    '',
    'What happens when a part the app depends on fails, as measured by `npm run test:faults` (run by `.ci/run`,',
    'which writes this page — do not edit it by hand). Every fault is injected into real servers on loopback:',
    'the sandbox (identity provider and GraphQL), a webhook receiver, the local folder, a killed process. Each',
    "row's sync must end with **every record delivered exactly once** (no change id twice, none missing, across",
    'the failed run and the run that resumes it) and **no secret or token in any log line**.',
    '',
    `**${asExpected} of ${faults.length} faults behaved as expected.**`,
    '',
    '| area | fault | expected | observed | as expected |',
    '| ---- | ----- | -------- | -------- | ----------- |',
    ...faults.map(
      (r) =>
        `| ${cell(r.area)} | ${cell(r.fault)} | ${cell(r.expected)} | ${cell(r.observed)} | ${r.ok ? 'yes' : '**NO**'} |`,
    ),
    '',
    '## Load',
    '',
    'Bounded in count and time, loopback only; figures from the same run.',
    '',
    '| what | figure | as expected |',
    '| ---- | ------ | ----------- |',
    ...loads.map((r) => `| ${cell(r.what)} | ${cell(r.figure)} | ${r.ok ? 'yes' : '**NO**'} |`),
    '',
    "Key Vault cannot run here: its rows replay the answers a real vault gave in the Azure SDK's own live",
    'recordings (and, for what they lack, the shapes Microsoft documents) over HTTPS, through the real client.',
    "The PostgreSQL sink's crash and replay cases are in test/integration/postgres-sink.test.ts (host killed mid-run, a page delivered twice, a refused record).",
    '',
  ].join('\n');
  writeFileSync(DOC, text);
  return text;
}
