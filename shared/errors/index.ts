/** The error vocabulary: codes and their texts (./codes.ts), the few error classes, problem documents. */
export * from './classes';
export * from './codes';
export * from './problem';
export type { ErrorTable, ErrorText } from './text';
export { bounded } from './text';
