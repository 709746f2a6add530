/**
 * Parquet, as the sync's sinks and the exports write it: columns learnt from the records, row groups written as
 * pages arrive, hyparquet-writer's internals in one adapter (hyparquet-adapter.ts).
 */
export { ColumnLearner, sameColumns, type ColumnKind, type LeadingColumn } from './columns';
export { eraseFromChangesParquet, writeChangesParquet, type ChangesParquetOptions } from './changes';
export { ParquetOfRecords } from './records';
export { ParquetRows, ROW_GROUP, writeParquet } from './writer';
