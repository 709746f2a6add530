import { setFlagsFromString } from 'node:v8';

/**
 * The V8 flags a process that runs a sync is given. A sync reads a stream's every record in one long pass, and what
 * outlives a request (a page waiting, a block upload in flight) is promoted and then kept until V8's next full
 * collection, which by default waits for the old generation to grow by a factor of up to 4. With the young
 * generation at 4 MB a half instead of 16, and the old one collected once it has grown by 10 %, a long pass peaks
 * lower (docs/benchmarks.md, "An old generation collected sooner").
 */
export const SYNC_NODE_FLAGS = ['--max-semi-space-size=4', '--heap-growing-percent=10'];
const [YOUNG_GENERATION, OLD_GENERATION_GROWTH] = SYNC_NODE_FLAGS;

/** A V8 flag's name as V8 reads it: `--x_y=1` sets the same flag as `--x-y=4`. */
const nameOf = (flag: string) => flag.split('=')[0].replaceAll('_', '-');

/** Those of `flags` that neither the process's own arguments nor NODE_OPTIONS set: the operator's values win. */
export function flagsNotSet(flags: string[], execArgv: string[], nodeOptions = ''): string[] {
  const own = new Set([...execArgv, ...nodeOptions.split(/\s+/)].filter(Boolean).map(nameOf));
  return flags.filter((flag) => !own.has(nameOf(flag)));
}

/**
 * The Functions app's share of SYNC_NODE_FLAGS comes in two ways, as V8 reads each. The young generation's size is
 * fixed when the heap is made, so it comes from NODE_OPTIONS, an app setting infra/main.bicep sets to this.
 */
export const APP_NODE_OPTIONS = YOUNG_GENERATION;

/**
 * …and `--heap-growing-percent`, which Node refuses in NODE_OPTIONS, V8 reads at each full collection: the app sets
 * it at start-up (shared/app.ts), unless the worker was started with its own value
 * (`languageWorkers__node__arguments`).
 * Measured at 1 M records, the app's set-up (docs/benchmarks.md, "The sync state in Blob Storage"): set this way the
 * full pass peaked where the CLI's did. These are the flags it sets.
 */
export function appRuntimeFlags(execArgv: string[], nodeOptions = ''): string[] {
  return flagsNotSet([OLD_GENERATION_GROWTH], execArgv, nodeOptions);
}

/** Sets `appRuntimeFlags`, once, as the app starts; returns what it set. */
export function applyAppHeapFlags(execArgv: string[], nodeOptions = ''): string[] {
  const set = appRuntimeFlags(execArgv, nodeOptions);
  for (const flag of set) setFlagsFromString(flag);
  return set;
}
