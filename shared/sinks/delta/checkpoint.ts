/*
 * A Delta checkpoint: the table's whole state at a version in one Parquet file (protocol, metaData, txn, add and the
 * tombstones a VACUUM still honours), with the schema the protocol gives it, and `_last_checkpoint` naming it.
 */
import type { SchemaElement } from 'hyparquet';
import { readDataFile } from './columns';
import type { Snapshot } from './actions';
import type { DeletionVector } from './deletion-vectors';
import type { DeltaStore } from './store';

const text = (name: string, required = false): SchemaElement => ({
  name,
  type: 'BYTE_ARRAY',
  converted_type: 'UTF8',
  repetition_type: required ? 'REQUIRED' : 'OPTIONAL',
});
const long = (name: string): SchemaElement => ({ name, type: 'INT64', repetition_type: 'OPTIONAL' });
const int = (name: string): SchemaElement => ({ name, type: 'INT32', repetition_type: 'OPTIONAL' });
const bool = (name: string): SchemaElement => ({ name, type: 'BOOLEAN', repetition_type: 'OPTIONAL' });
const group = (name: string, children: number): SchemaElement => ({
  name,
  repetition_type: 'OPTIONAL',
  num_children: children,
});
/** map<string,string>: the three-level MAP the Parquet format specifies. */
const stringMap = (name: string): SchemaElement[] => [
  { name, repetition_type: 'OPTIONAL', converted_type: 'MAP', num_children: 1 },
  { name: 'key_value', repetition_type: 'REPEATED', num_children: 2 },
  text('key', true),
  text('value'),
];

/** list<string>: the three-level LIST the Parquet format specifies. */
const stringList = (name: string): SchemaElement[] => [
  { name, repetition_type: 'OPTIONAL', converted_type: 'LIST', num_children: 1 },
  { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
  text('element'),
];
/** The DeletionVectorDescriptor struct (PROTOCOL.md, "Checkpoint Schema"). */
const deletionVector: SchemaElement[] = [
  group('deletionVector', 5),
  text('storageType'),
  text('pathOrInlineDv'),
  int('offset'),
  int('sizeInBytes'),
  long('cardinality'),
];

const SCHEMA: SchemaElement[] = [
  { name: 'schema', num_children: 5 },
  group('txn', 3),
  text('appId'),
  long('version'),
  long('lastUpdated'),
  group('add', 8),
  text('path'),
  ...stringMap('partitionValues'),
  long('size'),
  long('modificationTime'),
  bool('dataChange'),
  text('stats'),
  ...stringMap('tags'),
  ...deletionVector,
  // A checkpoint's `remove` carries neither stats nor tags (PROTOCOL.md, "Checkpoints").
  group('remove', 7),
  text('path'),
  long('deletionTimestamp'),
  bool('dataChange'),
  bool('extendedFileMetadata'),
  ...stringMap('partitionValues'),
  long('size'),
  ...deletionVector,
  group('metaData', 8),
  text('id'),
  text('name'),
  text('description'),
  group('format', 2),
  text('provider'),
  ...stringMap('options'),
  text('schemaString'),
  { name: 'partitionColumns', repetition_type: 'OPTIONAL', converted_type: 'LIST', num_children: 1 },
  { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
  text('element'),
  ...stringMap('configuration'),
  long('createdTime'),
  group('protocol', 4),
  int('minReaderVersion'),
  int('minWriterVersion'),
  ...stringList('readerFeatures'),
  ...stringList('writerFeatures'),
];

const big = (n: number | undefined) => (n === undefined ? null : BigInt(Math.trunc(n)));

/** The table's state as the checkpoint's rows: one action a row, the other columns null. */
function rows(state: Snapshot) {
  const out: Array<Record<string, unknown>> = [];
  const row = (column: string, value: unknown) => out.push({ [column]: value });
  const dv = (d: DeletionVector | undefined) =>
    d
      ? {
          storageType: d.storageType,
          pathOrInlineDv: d.pathOrInlineDv,
          offset: d.offset ?? null,
          sizeInBytes: d.sizeInBytes,
          cardinality: big(d.cardinality),
        }
      : null;
  if (state.protocol)
    row('protocol', {
      minReaderVersion: state.protocol.minReaderVersion,
      minWriterVersion: state.protocol.minWriterVersion,
      readerFeatures: state.protocol.readerFeatures ?? null,
      writerFeatures: state.protocol.writerFeatures ?? null,
    });
  if (state.metaData) {
    const m = state.metaData;
    row('metaData', {
      id: m.id,
      name: m.name ?? null,
      description: m.description ?? null,
      format: { provider: m.format.provider, options: m.format.options },
      schemaString: m.schemaString,
      partitionColumns: m.partitionColumns,
      configuration: m.configuration,
      createdTime: big(m.createdTime),
    });
  }
  for (const [appId, version] of state.txns) row('txn', { appId, version: big(version), lastUpdated: null });
  for (const a of state.files.values())
    row('add', {
      path: a.path,
      partitionValues: a.partitionValues,
      size: big(a.size),
      modificationTime: big(a.modificationTime),
      dataChange: false,
      stats: a.stats ?? null,
      tags: a.tags ?? null,
      deletionVector: dv(a.deletionVector),
    });
  for (const r of state.tombstones.values())
    row('remove', {
      path: r.path,
      deletionTimestamp: big(r.deletionTimestamp),
      dataChange: false,
      extendedFileMetadata: r.extendedFileMetadata ?? false,
      partitionValues: r.partitionValues ?? {},
      size: big(r.size),
      deletionVector: dv(r.deletionVector),
    });
  return out;
}

const hyparquetWriter = () =>
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  require('hyparquet-writer') as typeof import('hyparquet-writer');

/** Writes the checkpoint of `state.version`, then `_last_checkpoint` (a reader that finds no file reads the log). */
export async function writeCheckpoint(
  store: DeltaStore,
  table: string,
  state: Snapshot,
  options: { abortSignal?: AbortSignal } = {},
): Promise<void> {
  const all = rows(state);
  const columns = ['txn', 'add', 'remove', 'metaData', 'protocol'];
  const bytes = hyparquetWriter().parquetWriteBuffer({
    schema: SCHEMA as never,
    columnData: columns.map((name) => ({ name, data: all.map((r) => r[name] ?? null) })),
  });
  const name = `${String(state.version).padStart(20, '0')}.checkpoint.parquet`;
  await store.put(`${table}/_delta_log/${name}`, Buffer.from(bytes), options);
  await store.put(
    `${table}/_delta_log/_last_checkpoint`,
    JSON.stringify({ version: state.version, size: all.length }),
    options,
  );
}

/** BigInt to number, through every object and list the reader made. */
const plain = (v: unknown): unknown => {
  if (typeof v === 'bigint') return Number(v);
  if (Array.isArray(v)) return v.map(plain);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  return v;
};

/** The actions a checkpoint holds, as a reader replays them. */
export async function readCheckpoint(bytes: Buffer): Promise<Array<Record<string, unknown>>> {
  const objects = await readDataFile(bytes);
  const out: Array<Record<string, unknown>> = [];
  for (const row of objects)
    for (const [k, v] of Object.entries(row)) if (v !== null && v !== undefined) out.push({ [k]: plain(v) });
  return out;
}
