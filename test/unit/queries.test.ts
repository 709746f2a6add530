import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { LOG_FIELDS } from '../../shared/log/fields';
import { LOGIN_RUN } from '../../shared/device-login/orchestration';
import { EXPORT_RUN } from '../../shared/exports/orchestration';
import { IMPORT_RUN } from '../../shared/imports/orchestration';
import { SYNC_RUN } from '../../shared/sync/orchestration';

/**
 * Every query an operator is given — the alert rules and the workbook in Bicep, the queries in the docs — reads only
 * what the app emits: the tables OpenTelemetry fills (`traces` for log records, `dependencies` for spans), messages
 * and span names that the code writes, and fields from the allow-list. A renamed message or field fails here, not in
 * an alert that silently never fires.
 */
const root = join(__dirname, '..', '..');
const read = (p: string) => readFileSync(join(root, p), 'utf8');

function sources(dir: string): string[] {
  return readdirSync(join(root, dir)).flatMap((f) => {
    const p = join(dir, f);
    return statSync(join(root, p)).isDirectory() ? sources(p) : p.endsWith('.ts') ? [p] : [];
  });
}
const code = [...sources('shared'), ...sources('functions')].map(read).join('\n');

/** The kinds of run, as their features declare them: each names its span and its failure's record. */
const RUN_KINDS = [SYNC_RUN, EXPORT_RUN, IMPORT_RUN, LOGIN_RUN];

/**
 * The messages the app logs: the literal second argument of every `.log(level, 'message', …)`, and each kind of
 * run's failure record (logged by its feature and by the sweep).
 */
const MESSAGES = new Set(
  [
    ...RUN_KINDS.map((k) => [k.failedRecord, k.failedRecord]),
    ...code.matchAll(
      /\.log\(\s*(?:'(?:debug|info|warn|error)'|[^,]+?),\s*(?:[^,]*\?\s*)?'([^']+)'(?:\s*:\s*'([^']+)')?/g,
    ),
  ].flatMap((m) => [m[1], m[2]].filter(Boolean)),
);
/** The span names the app records: the literal first argument of `inSpan`, `traced` and `endRunSpan`. */
const SPANS = new Set([
  ...[...code.matchAll(/\b(?:inSpan|traced|endRunSpan)\(\s*'([^']+)'/g)].map((m) => m[1]),
  // Each kind's run span, as its feature declares it (every run and the sweep name it from there).
  ...RUN_KINDS.map((k) => k.span),
]);

/** What App Insights has in the tables the app's telemetry fills (Azure Monitor's OpenTelemetry mapping). */
const COLUMNS: Record<string, string[]> = {
  traces: [
    'timestamp',
    'message',
    'severityLevel',
    'customDimensions',
    'operation_Id',
    'operation_ParentId',
    'cloud_RoleName',
  ],
  dependencies: [
    'timestamp',
    'name',
    'duration',
    'success',
    'resultCode',
    'customDimensions',
    'operation_Id',
    'id',
    'type',
    'target',
  ],
};
const KQL = new Set(
  'where project extend summarize by top desc asc union print render and or not in count countif sum isnotempty isnotnull tostring todouble toint bin percentile datetime null true false strcat startswith contains has columnchart timechart barchart h d m let'.split(
    ' ',
  ),
);

interface Found {
  where: string;
  query: string;
}

function queries(): Found[] {
  const bicep = read('infra/modules/alerts.bicep');
  const inBicep = [...bicep.matchAll(/query: '([^\n]+)'\n/g)].map((m) => ({
    where: 'infra/modules/alerts.bicep',
    query: m[1],
  }));
  const docs = readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .flatMap((f) =>
      [...read(`docs/${f}`).matchAll(/```kusto\n([\s\S]*?)```/g)].flatMap((m) =>
        m[1]
          .split('\n')
          .filter(Boolean)
          .map((q) => ({ where: `docs/${f}`, query: q })),
      ),
    );
  return [...inBicep, ...docs];
}

/** What a query names that the app does not emit; empty when it reads only what is there. */
function unknownNames(query: string): string[] {
  const problems: string[] = [];
  const q = query.replace(/\$\{[^}]+\}/g, '2'); // Bicep interpolations are numbers here
  const tables = [...q.matchAll(/(?:^|\(|union\s*\()\s*(\w+)\s*\|/g)].map((m) => m[1]);
  if (!tables.length) problems.push('no table');
  for (const t of tables) if (!COLUMNS[t]) problems.push(`table ${t}`);
  for (const m of q.matchAll(/\bmessage\s*(?:==|in)\s*\(?\s*((?:"[^"]*"\s*,?\s*)+)/g))
    for (const lit of m[1].matchAll(/"([^"]*)"/g))
      if (!MESSAGES.has(lit[1])) problems.push(`message "${lit[1]}"`);
  for (const m of q.matchAll(/\bname\s*(?:==|in)\s*\(?\s*((?:"[^"]*"\s*,?\s*)+)/g))
    for (const lit of m[1].matchAll(/"([^"]*)"/g)) if (!SPANS.has(lit[1])) problems.push(`span "${lit[1]}"`);
  const fields = new Set<string>(LOG_FIELDS);
  for (const m of q.matchAll(/\bcustomDimensions(?:\.(\w+)|\["(\w+)"\])/g))
    if (!fields.has(m[1] ?? m[2])) problems.push(`field ${m[1] ?? m[2]}`);
  // Columns: every other identifier is a column of its table, a name the query defines, or KQL's own.
  const defined = new Set([...q.matchAll(/\b(\w+)\s*=(?!=)/g)].map((m) => m[1]));
  const bare = q
    .replace(/"[^"]*"/g, '""')
    .replace(/\bcustomDimensions(?:\.\w+|\["\w+"\])/g, 'customDimensions')
    .match(/\b[A-Za-z_]\w*\b/g);
  const known = new Set(tables.flatMap((t) => COLUMNS[t] ?? []));
  for (const id of bare ?? [])
    if (!KQL.has(id) && !defined.has(id) && !known.has(id) && !tables.includes(id) && !/^\d/.test(id))
      problems.push(`column ${id}`);
  return [...new Set(problems)];
}

describe('the queries operators are given read what the app emits', () => {
  const found = queries();

  it('finds the alert rules, the workbook and the docs’ queries', () => {
    expect(found.filter((f) => f.where.endsWith('.bicep')).length).toBe(10);
    expect(found.filter((f) => f.where.startsWith('docs/')).length).toBeGreaterThanOrEqual(4);
    expect(MESSAGES.has('sync run failed')).toBe(true);
    expect(SPANS.has('graphql')).toBe(true);
  });

  it.each(queries().map((f, i) => [`${f.where} #${i + 1}`, f.query]))(
    '%s names only what is emitted',
    (_where, query) => {
      expect(unknownNames(query)).toEqual([]);
    },
  );

  it('the check itself refuses what is not emitted: a renamed message, a field, a column, a table', () => {
    expect(unknownNames('traces | where message == "sync run done" | project timestamp')).toEqual([
      'message "sync run done"',
    ]);
    expect(
      unknownNames(
        'traces | where message == "sync run failed" | project runid = tostring(customDimensions.runID)',
      ),
    ).toEqual(['field runID']);
    expect(unknownNames('traces | where severity >= 2')).toEqual(['column severity']);
    expect(unknownNames('requests | where name == "sync run"')).toContain('table requests');
    expect(unknownNames('dependencies | where name == "sync pass"')).toEqual(['span "sync pass"']);
  });
});
