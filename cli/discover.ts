import { writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { createAccessLayer } from '../shared/access';
import { discover, storedCatalog, streamsFileJson, type Discovery } from '../shared/catalog';
import { CATALOG_SETTINGS } from '../shared/catalog/settings';
import { partOf } from '../shared/config';
import type { Proposal } from '../shared/catalog/discover';
import { introspect } from '../shared/catalog/introspect';
import { IntegrationError } from '../shared/errors';
import { proposeOperations } from '../shared/imports/propose';
import type { StreamDefinition } from '../shared/streams';
import { FileCatalogStore } from '../shared/state/catalog-store';
import { localStateFolder } from '../shared/state/local';
import { parse } from './args';
import { describeTarget, resolveTenant } from './context';

const paging = (s: StreamDefinition): string => {
  switch (s.pagination) {
    case 'cursor':
      return `cursor (${s.paths.node ? 'edges' : 'nodes'}, ${s.paths.pageSizeVariable}/${s.paths.cursorVariable})`;
    case 'offset':
      return `offset (${s.paths.limitVariable}/${s.paths.offsetVariable}${s.paths.total ? ', with a total' : ', no total'})`;
    case 'page':
      return `numbered pages (${s.paths.pageVariable}/${s.paths.perPageVariable}${s.paths.total || s.paths.totalPages ? ', with a total' : s.paths.hasNextPage ? ', with a has-more flag' : ', no total'}; ${s.paths.firstPageUnknown ? 'where they start is not known yet: pages 0 and 1 are empty, asked again before each run until records show' : `from ${s.paths.firstPage}`})`;
    case 'token':
      return `a token to the next page (${s.paths.limitVariable}/${s.paths.tokenVariable})`;
    case 'none':
      return 'one answer, no paging';
  }
};

const incrementally = (i: NonNullable<StreamDefinition['incremental']>): string =>
  i.kind === 'order'
    ? `newest first by ${i.field} ($${i.variable}), to the last pass's mark`
    : i.kind === 'filter'
      ? `records whose ${i.field} is at or after the last pass's mark ($${i.variable}: ${JSON.stringify(i.value)})`
      : `$${i.variable} against ${i.field}`;

const POLICY_WORDS = { hash: 'hashed', drop: 'dropped', keep: 'kept as sent' } as const;

function describeProposal(p: Proposal, chosen: keyof typeof POLICY_WORDS): string {
  const s = p.stream;
  const lines = [
    `  ${s.name}`,
    `    paging:  ${paging(s)}${s.pagination === 'none' ? '' : `, ${s.pageSize} a page`}`,
    `    key:     ${p.key}`,
    `    fields:  ${p.fields}${s.incremental ? `; reads incrementally: ${incrementally(s.incremental)}` : ''}`,
    ...(s.parent
      ? [
          `    parent:  ${s.parent.stream} — read for each of its records, its ${s.parent.key} passed as $${s.parent.variable} and kept as ${s.parent.as}`,
        ]
      : []),
  ];
  if (p.incremental) lines.push(`    incremental: ${p.incremental}`);
  if (p.pageEnds) lines.push(`    ends:    ${p.pageEnds}`);
  for (const l of p.leftOut) lines.push(`    left out: ${l.field} — ${l.reason}`);
  if (p.personal?.length)
    lines.push(
      `    personal: ${p.personal.map((f) => `${f.field} (${f.kind})`).join(', ')} — ${POLICY_WORDS[chosen]} (SYNC_PERSONAL_DATA=${chosen}; per field in the streams file's "personal")`,
    );
  return lines.join('\n');
}

/** `tenant-integrations discover`: the proposed (or stored) catalog in plain words, and written out for editing. */
export async function discoverCommand(args: string[]): Promise<number> {
  const { values } = parse(args, {
    out: { type: 'string' },
    operations: { type: 'string' },
    stored: { type: 'boolean' },
    json: { type: 'boolean' },
  });
  const target = await resolveTenant();
  try {
    const { config } = target;
    const access = createAccessLayer(config);
    if (!values.json) describeTarget(target);
    let streams: StreamDefinition[];
    let found: Discovery | undefined;
    if (values.stored) {
      const stored = await storedCatalog(new FileCatalogStore(localStateFolder(config)), config.tenant.name);
      if (!stored) {
        process.stderr.write(
          `No catalog is stored for ${config.tenant.name} yet: the first \`sync\` discovers and stores one (run \`discover\` without --stored to see it now).\n`,
        );
        return 1;
      }
      streams = stored.streams;
      if (!values.json)
        process.stderr.write(
          `The stored catalog of ${config.tenant.name}${stored.discoveredAt ? ` (discovered ${stored.discoveredAt})` : ''}: ${streams.map((s) => s.name).join(', ')}\n`,
        );
    } else {
      await access.m2m.getToken(); // a set-up problem is said once, before introspection
      try {
        found = await discover(access.graphql, { maxStreams: partOf(config, CATALOG_SETTINGS).maxStreams });
      } catch (err) {
        if (err instanceof IntegrationError && err.code === 'introspection_refused')
          process.stderr.write(
            'The tenant refuses introspection: discovery cannot read its schema. Write the streams yourself in a file named by SYNC_STREAMS_FILE (docs/sync.md, "When introspection is refused").\n',
          );
        throw err;
      }
      streams = found.streams.map((p) => p.stream);
      if (!values.json) {
        process.stderr.write(
          `Discovered ${streams.length} stream${streams.length === 1 ? '' : 's'} in ${config.tenant.name}'s schema:\n${found.streams.map((p) => describeProposal(p, partOf(config, CATALOG_SETTINGS).personal.chosen)).join('\n')}\n`,
        );
        for (const u of found.unreadable)
          process.stderr.write(`  ${u.stream}: proposed, but it cannot be read — ${u.reason}\n`);
        if (found.invalid.length)
          process.stderr.write(
            `The tenant's schema is invalid in ${found.invalid.length} place${found.invalid.length === 1 ? '' : 's'} (schema_invalid; only a stream that reads there is held back):\n${found.invalid
              .map((p) => `  ${p.message}`)
              .join('\n')}\n`,
          );
        if (found.skipped.length)
          process.stderr.write(
            `Not streams: ${found.skipped.map((s) => `${s.field} (${s.reason})`).join('; ')}\n`,
          );
      }
    }
    if (values.out) {
      const file = resolve(values.out);
      await writeFile(file, streamsFileJson(streams));
      if (!values.json)
        process.stderr.write(
          `Wrote ${file}: edit it, then set SYNC_STREAMS_FILE=${file} to use it (without the setting, runs read the stored catalog).\n`,
        );
    }
    if (values.operations) {
      const file = resolve(values.operations);
      const operations = proposeOperations(await introspect(access.graphql));
      await writeFile(file, `${JSON.stringify({ operations }, null, 2)}\n`);
      if (!values.json)
        process.stderr.write(
          `Wrote ${file}: ${Object.keys(operations).length} mutation${Object.keys(operations).length === 1 ? '' : 's'} (${Object.keys(operations).join(', ') || 'none'}). Keep those imports may run, then set IMPORT_OPERATIONS_FILE=${file} (docs/import.md).\n`,
        );
    }
    if (values.json)
      process.stdout.write(
        `${JSON.stringify({
          tenant: config.tenant.name,
          streams,
          ...(found
            ? {
                proposals: found.streams.map((p) => ({
                  stream: p.stream.name,
                  key: p.key,
                  fields: p.fields,
                  leftOut: p.leftOut,
                  ...(p.personal ? { personal: p.personal } : {}),
                  ...(p.incremental ? { incremental: p.incremental } : {}),
                  ...(p.pageEnds ? { pageEnds: p.pageEnds } : {}),
                })),
                unreadable: found.unreadable,
                skipped: found.skipped,
                invalid: found.invalid.map((p) => ({ code: 'schema_invalid', ...p })),
              }
            : {}),
        })}\n`,
      );
    return 0;
  } finally {
    await target.close();
  }
}
