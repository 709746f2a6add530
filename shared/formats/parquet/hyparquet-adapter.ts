import { appendFileSync, writeFileSync } from 'node:fs';
import type { ColumnChunk, RowGroup, SchemaElement } from 'hyparquet';
import type { ParquetWriter } from 'hyparquet-writer';
import type { Writer } from 'hyparquet-writer/src/types.js';

/**
 * The one file that reaches into hyparquet-writer's and hyparquet's internals (their src/ modules and the writer's
 * fields), for what their public API does not offer and the export goal needs (docs/benchmarks.md, "Export"):
 *
 * - `fileWriter`: the writer's buffered file output, also handing each piece on (an export streams it to Blob Storage);
 * - `writeRowGroup`: a row group written a column per turn of the event loop, with text statistics known already;
 * - `rowGroupEntry` / `finishWithEntries`: the footer's row-group entries serialized as groups are written.
 *
 * The bytes are the writer's own: test/integration/parquet.test.ts compares whole files with the writer's.
 * On upgrading hyparquet-writer or hyparquet (versions pinned exactly in package.json): compare src/parquet-writer.js
 * (`write`, `finish`), src/column.js, src/metadata.js and src/node.js (`fileWriter`) with what is mirrored here, run
 * test/integration/parquet.test.ts and `npm run bench -- export`.
 */

/** The file is written in pieces of about this size. */
const FILE_PIECE_BYTES = 1_000_000;

/**
 * hyparquet-writer's buffered file writer (its Node entry point's `fileWriter`, the same steps), which also hands each
 * piece it writes to `onBytes` — an export streams the file to Blob Storage while it is written.
 */
export function fileWriter(
  writer: import('hyparquet-writer').ByteWriter,
  path: string,
  onBytes?: (bytes: Uint8Array) => void,
): import('hyparquet-writer').ByteWriter {
  writeFileSync(path, '');
  const grow = writer.ensure.bind(writer);
  const flush = () => {
    const piece = new Uint8Array(writer.buffer, 0, writer.index);
    appendFileSync(path, piece);
    onBytes?.(piece.slice()); // the writer reuses its buffer
    writer.index = 0;
  };
  writer.ensure = (size: number) => {
    if (writer.index > FILE_PIECE_BYTES) flush();
    grow(size);
  };
  writer.finish = flush;
  return writer;
}

/** The writer whose internals the functions below use. */
export type RowsWriter = import('hyparquet-writer').ParquetWriter;
export type TextStatistics = NonNullable<NonNullable<ColumnChunk['meta_data']>['statistics']>;
/** A column to write; a text column with its statistics, kept as its texts were encoded (`encodeTexts`). */
export type Column = Pick<
  import('hyparquet-writer/src/types.js').ColumnSource,
  'name' | 'data' | 'encoding'
> & {
  statistics?: TextStatistics;
};

/**
 * One row group, as hyparquet-writer's `ParquetWriter.write` writes it (src/parquet-writer.js: the same calls for flat
 * columns, so the same bytes) — but a column per turn of the event loop: a page's answer arriving during a group's
 * write is read between columns and the next page asked for, not after the whole group (docs/benchmarks.md, "Export").
 */
export async function writeRowGroup(w: RowsWriter, columnData: Column[], rows: number): Promise<void> {
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { writeColumn } =
    require('hyparquet-writer/src/column.js') as typeof import('hyparquet-writer/types/column');
  const { encodeNestedValues } =
    require('hyparquet-writer/src/dremel.js') as typeof import('hyparquet-writer/types/dremel');
  const { schemaPathResolver } =
    require('hyparquet-writer/src/schema.js') as typeof import('hyparquet-writer/types/schema');
  /* eslint-enable @typescript-eslint/no-require-imports */
  const resolve = schemaPathResolver(w.schema);
  const start = w.writer.offset;
  const columns: ColumnChunk[] = [];
  for (const { name, data, encoding, statistics } of columnData) {
    await new Promise<void>((r) => setImmediate(r));
    const path = resolve([name]); // a flat column: its own leaf
    const schemaPath = path.map((node) => node.element);
    const result = writeColumn({
      writer: w.writer,
      column: {
        columnName: name,
        element: schemaPath[schemaPath.length - 1],
        schemaPath,
        codec: w.codec,
        compressors: w.compressors,
        // A text column's statistics are known already: the writer's would compare every value's bytes again.
        stats: w.statistics && !statistics,
        statisticsTruncateLength: w.statisticsTruncateLength,
        pageSize: 1_048_576,
        dictionarySize: undefined,
        columnIndex: false,
        offsetIndex: true,
        encoding,
        bloomFilter: undefined,
      },
      pageData: encodeNestedValues(path, data),
    });
    const meta = result.chunk.meta_data;
    if (w.statistics && statistics && meta) {
      // What the writer records with its own statistics (src/column.js): these, and how its pages are encoded.
      meta.statistics = statistics;
      meta.encoding_stats = [
        ...(meta.dictionary_page_offset === undefined
          ? []
          : [{ page_type: 'DICTIONARY_PAGE' as const, encoding: 'PLAIN' as const, count: 1 }]),
        {
          page_type: 'DATA_PAGE_V2' as const,
          encoding: meta.encodings[meta.encodings.length - 1],
          count: result.offsetIndex?.page_locations.length ?? 1,
        },
      ];
    }
    columns.push(result.chunk);
    w.pendingIndexes.push(result);
  }
  let total = 0n;
  for (const { meta_data } of columns) total += meta_data?.total_uncompressed_size ?? 0n;
  w.num_rows += BigInt(rows);
  w.row_groups.push({
    columns,
    total_byte_size: total,
    num_rows: BigInt(rows),
    total_compressed_size: BigInt(w.writer.offset - start),
  });
}

/**
 * A Parquet file's footer (its FileMetaData), as hyparquet-writer's `writeMetadata` (src/metadata.js, version pinned
 * in package.json) maps and serializes it — but each row group's entry serialized once its group has been written
 * (`rowGroupEntry`), while the next pages arrive, so that the end of the file, where nothing else runs, only joins
 * them (`writeFooter`; docs/benchmarks.md, "Export"). The bytes are the writer's own
 * (test/integration/parquet.test.ts compares whole files).
 */

type Thrift = Record<`field_${number}`, unknown>;

/* eslint-disable @typescript-eslint/no-require-imports */
const thrift = () =>
  require('hyparquet-writer/src/thrift.js') as typeof import('hyparquet-writer/types/thrift');
const unconvert = () =>
  require('hyparquet-writer/src/unconvert.js') as typeof import('hyparquet-writer/types/unconvert');
const metadata = () =>
  require('hyparquet-writer/src/metadata.js') as typeof import('hyparquet-writer/types/metadata');
const constants = () => require('hyparquet/src/constants.js') as typeof import('hyparquet/types/constants');
const bytes = () => require('hyparquet-writer') as typeof import('hyparquet-writer');
const indexes = () =>
  require('hyparquet-writer/src/indexes.js') as typeof import('hyparquet-writer/types/indexes');
const blooms = () =>
  require('hyparquet-writer/src/bloom.js') as typeof import('hyparquet-writer/types/bloom');
/* eslint-enable @typescript-eslint/no-require-imports */

/**
 * A row group's entry of the footer, serialized; undefined when it holds what this file does not map (geospatial
 * statistics: the writer's own footer is written then). `elementOf` answers a flat column's schema element as the
 * footer will hold it (with the annotations the writer is given only at the end).
 */
export function rowGroupEntry(
  group: RowGroup,
  elementOf: (name: string) => SchemaElement | undefined,
  statisticsTruncateLength?: number,
): Uint8Array | undefined {
  const { ParquetTypes, Encodings, CompressionCodecs, PageTypes } = constants();
  const { unconvertStatistics } = unconvert();
  const columns: Thrift[] = [];
  for (const c of group.columns) {
    const m = c.meta_data;
    const element = m && m.path_in_schema.length === 1 ? elementOf(m.path_in_schema[0]) : undefined;
    if (m && (!element || m.geospatial_statistics)) return undefined;
    columns.push({
      field_1: c.file_path,
      field_2: c.file_offset,
      field_3: m && {
        field_1: ParquetTypes.indexOf(m.type),
        field_2: m.encodings.map((e) => Encodings.indexOf(e)),
        field_3: m.path_in_schema,
        field_4: CompressionCodecs.indexOf(m.codec),
        field_5: m.num_values,
        field_6: m.total_uncompressed_size,
        field_7: m.total_compressed_size,
        field_8:
          m.key_value_metadata && m.key_value_metadata.map((kv) => ({ field_1: kv.key, field_2: kv.value })),
        field_9: m.data_page_offset,
        field_10: m.index_page_offset,
        field_11: m.dictionary_page_offset,
        field_12:
          m.statistics && element && unconvertStatistics(m.statistics, element, statisticsTruncateLength),
        field_13:
          m.encoding_stats &&
          m.encoding_stats.map((es) => ({
            field_1: PageTypes.indexOf(es.page_type),
            field_2: Encodings.indexOf(es.encoding),
            field_3: es.count,
          })),
        field_14: m.bloom_filter_offset,
        field_15: m.bloom_filter_length,
        field_16: m.size_statistics && {
          field_1: m.size_statistics.unencoded_byte_array_data_bytes,
          field_2: m.size_statistics.repetition_level_histogram,
          field_3: m.size_statistics.definition_level_histogram,
        },
      },
      field_4: c.offset_index_offset,
      field_5: c.offset_index_length,
      field_6: c.column_index_offset,
      field_7: c.column_index_length,
      field_9: c.encrypted_column_metadata,
    });
  }
  const out = new (bytes().ByteWriter)();
  thrift().serializeTCompactProtocol(out, {
    field_1: columns,
    field_2: group.total_byte_size,
    field_3: group.num_rows,
    field_4:
      group.sorting_columns &&
      group.sorting_columns.map((sc) => ({
        field_1: sc.column_idx,
        field_2: sc.descending,
        field_3: sc.nulls_first,
      })),
    field_5: group.file_offset,
    field_6: group.total_compressed_size,
  });
  return out.getBytes().slice();
}

/** What the file's end writes into a column chunk (page indexes, bloom filters): an entry made before is stale. */
const laterFields = (c: ColumnChunk) =>
  c.offset_index_offset !== undefined ||
  c.column_index_offset !== undefined ||
  c.meta_data?.bloom_filter_offset !== undefined;

/**
 * What the writer's `finish` does — its page indexes and bloom filters, the footer, the closing magic, the file writer's
 * end — with the footer's row groups from `entries` (one per group, in order), made again with `entryOf` for a group
 * whose chunks the indexes changed (a chunk of more than one page).
 */
export function finishWithEntries(
  w: ParquetWriter,
  entries: Uint8Array[],
  entryOf: (group: RowGroup) => Uint8Array | undefined,
): void {
  indexes().writeIndexes(w.writer, w.pendingIndexes);
  blooms().writeBlooms(w.writer, w.pendingIndexes);
  const final = w.row_groups.map((group, i) => {
    const entry = group.columns.some(laterFields) ? entryOf(group) : entries[i];
    // Made from what made the first one: it cannot fail where that one did not.
    if (!entry) throw new Error(`parquet: row group ${i}'s footer entry could not be made again`);
    return entry;
  });
  writeFooter(
    w.writer,
    { schema: w.schema, num_rows: w.num_rows, key_value_metadata: w.kvMetadata, created_by: w.createdBy },
    final,
  );
  w.writer.finish();
}

/** The FileMetaData with its row groups' entries given, its length and the closing magic (`writeMetadata`'s bytes). */
function writeFooter(
  writer: Writer,
  file: {
    schema: SchemaElement[];
    num_rows: bigint;
    key_value_metadata?: Array<{ key: string; value?: string }>;
    created_by?: string;
  },
  entries: Uint8Array[],
): void {
  const { ParquetTypes, FieldRepetitionTypes, ConvertedTypes } = constants();
  const { logicalType } = metadata();
  const { serializeTCompactProtocol } = thrift();
  const start = writer.offset;
  // Fields 1-3 (version, schema, rows) as the writer maps them, without the struct's closing STOP byte: field 4 follows.
  const head = new (bytes().ByteWriter)();
  serializeTCompactProtocol(head, {
    field_1: 2,
    field_2: file.schema.map((element) => ({
      field_1: element.type && ParquetTypes.indexOf(element.type),
      field_2: element.type_length,
      field_3: element.repetition_type && FieldRepetitionTypes.indexOf(element.repetition_type),
      field_4: element.name,
      field_5: element.num_children,
      field_6: element.converted_type && ConvertedTypes.indexOf(element.converted_type),
      field_7: element.scale,
      field_8: element.precision,
      field_9: element.field_id,
      field_10: logicalType(element.logical_type),
    })),
    field_3: file.num_rows,
  });
  writer.appendBytes(head.getBytes().subarray(0, -1));
  // Field 4 (one after 3: delta 1), a list of structs (compact type 12), then each entry as serialized.
  writer.appendUint8((1 << 4) | 9);
  if (entries.length > 14) {
    writer.appendUint8((15 << 4) | 12);
    writer.appendVarInt(entries.length);
  } else writer.appendUint8((entries.length << 4) | 12);
  for (const entry of entries) writer.appendBytes(entry);
  // Fields 5-7 numbered 1-3: the compact protocol writes each field id as its distance from the one before, and these
  // follow field 4 as 1-3 follow the struct's start.
  serializeTCompactProtocol(writer, {
    field_1:
      file.key_value_metadata &&
      file.key_value_metadata.map((kv) => ({ field_1: kv.key, field_2: kv.value })),
    field_2: file.created_by,
    field_3: file.schema.filter((element) => element.type).map(() => ({ field_1: {} })),
  });
  writer.appendUint32(writer.offset - start);
  writer.appendUint32(0x31524150); // PAR1
}
