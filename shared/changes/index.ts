/**
 * The changes' vocabulary, shared by the sync engine, the sinks and the exports: the change and its JSON, a pass's
 * counts, and what a sink does with a record it cannot store.
 */
export { change, changeJson, recordJsonOf, type Change, type ChangeKind } from './change';
export { noCounts, streamCountsSchema, type StreamCounts } from './counts';
export {
  rejectedError,
  shownId,
  sortOut,
  unstorable,
  type RejectedPolicy,
  type RejectedRecord,
} from './rejected';
